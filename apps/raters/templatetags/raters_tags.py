from django import template

register = template.Library()


@register.filter
def value_of(values, name):
    """``values[name]`` for a dict of submitted values, or None."""
    if isinstance(values, dict):
        return values.get(name)
    return None
