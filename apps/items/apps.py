from django.apps import AppConfig


class ItemsConfig(AppConfig):
    name = "apps.items"
    label = "items"
    verbose_name = "Items and design"

    def ready(self) -> None:
        from apps.deviations.refs import register_ref_type
        from apps.items.component import DESIGN_COMPONENT
        from apps.items.refs import item_url
        from apps.protocols.components import register_component

        register_component(DESIGN_COMPONENT)
        register_ref_type("item", item_url)
