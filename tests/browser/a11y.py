"""Accessibility basics checked on a live page: every form control has a label, text has the
contrast WCAG 2.1 asks (success criterion 1.4.3, level AA: 4.5:1, or 3:1 for large text), and at
a phone's 375 px width the page does not scroll sideways."""

PHONE_WIDTH = 375

# Controls a person fills in; buttons name themselves and hidden inputs are not seen.
UNLABELLED_JS = """
() => Array.from(document.querySelectorAll('input, select, textarea'))
  .filter(el => !['hidden', 'submit', 'button', 'reset', 'image'].includes(el.type))
  .filter(el => {
    if (el.labels && Array.from(el.labels).some(l => l.textContent.trim())) return false;
    if ((el.getAttribute('aria-label') || '').trim()) return false;
    const by = (el.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean);
    if (by.some(id => (document.getElementById(id)?.textContent || '').trim())) return false;
    return true;
  })
  .map(el => `${el.tagName.toLowerCase()}[name=${el.name || '?'}]#${el.id || '?'}`)
"""

# The outermost element that sticks out past the viewport and is not inside a container that
# scrolls or clips it (the first such in document order), to say what to fix.
OVERFLOW_JS = """
(limit) => {
  const width = document.documentElement.scrollWidth;
  if (width <= limit + 1) return null;
  // Whether a scrolling or clipping ancestor holds el in. An absolutely placed element escapes
  // the clipping of every ancestor up to its containing block (the nearest positioned one).
  const clipped = el => {
    const own = getComputedStyle(el).position;
    if (own === 'fixed') return false;
    let escaping = own === 'absolute';
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (escaping && style.position === 'static') continue;
      escaping = false;
      if (style.overflowX !== 'visible') return true;
    }
    return false;
  };
  for (const el of document.body.querySelectorAll('*')) {
    const right = el.getBoundingClientRect().right;
    if (right > limit + 1 && !clipped(el)) {
      return {width, worst: {right, tag: el.tagName.toLowerCase(), cls: String(el.className || ''),
                             id: el.id || '', parent: el.parentElement.tagName.toLowerCase() + '.' +
                             String(el.parentElement.className || '')}};
    }
  }
  // Text that runs out of its box (a long unbroken word) shows in no element's rectangle.
  for (const el of document.body.querySelectorAll('*')) {
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0 && !clipped(el) &&
        getComputedStyle(el).overflowX === 'visible') {
      const right = el.getBoundingClientRect().left + el.scrollWidth;
      if (right > limit + 1) {
        const tag = el.tagName.toLowerCase();
        return {width, worst: {right, tag, cls: String(el.className || ''), id: el.id || '',
                               parent: 'its own text'}};
      }
    }
  }
  return {width, worst: null};
}
"""


# Every element with its own visible text: its colour against the first opaque background found
# walking up (the page is white), WCAG 2.1's relative luminance and contrast ratio. Large text is
# 24 px, or 18.66 px bold. Text over an image or a gradient is not judged.
CONTRAST_JS = """
() => {
  const parse = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lin = v => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  };
  const lum = ([r, g, b]) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  const background = el => {
    for (let a = el; a; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (style.backgroundImage !== 'none') return null;
      const c = parse(style.backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] === 1)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const failures = [];
  for (const el of document.body.querySelectorAll('*')) {
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const style = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    if (style.visibility === 'hidden' || box.width <= 1 || box.height <= 1) continue;
    const fg = parse(style.color);
    const bg = background(el);
    if (!bg || (fg.length === 4 && fg[3] < 1)) continue;
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) {
      failures.push(`${el.tagName.toLowerCase()}.${String(el.className || '')} ` +
        `"${el.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}:1`);
    }
  }
  return failures;
}
"""


def low_contrast_text(page) -> list[str]:
    """The elements of ``page`` whose own text falls below WCAG 2.1 AA contrast, with the ratio."""
    return page.evaluate(CONTRAST_JS)


def unlabelled_controls(page) -> list[str]:
    """The inputs, selects and textareas of ``page`` that have no label (a ``label`` tied by
    ``for`` or wrapping them, ``aria-label`` or ``aria-labelledby``)."""
    return page.evaluate(UNLABELLED_JS)


def phone_overflow(page) -> dict | None:
    """None when ``page`` at 375 px wide does not scroll horizontally; else the document's width
    and the element reaching furthest right. The viewport is put back afterwards."""
    size = page.viewport_size
    page.set_viewport_size({"width": PHONE_WIDTH, "height": size["height"]})
    try:
        return page.evaluate(OVERFLOW_JS, PHONE_WIDTH)
    finally:
        page.set_viewport_size(size)


def accessibility_problems(page) -> list[str]:
    """Every failure of the basics on ``page``, as sentences; empty when it passes."""
    problems = [f"unlabelled {control}" for control in unlabelled_controls(page)]
    problems += [f"low contrast {text}" for text in low_contrast_text(page)]
    overflow = phone_overflow(page)
    if overflow:
        worst = overflow["worst"] or {}
        problems.append(
            f"at {PHONE_WIDTH} px the page is {overflow['width']} px wide "
            f"(widest: <{worst.get('tag')} class='{worst.get('cls')}' id='{worst.get('id')}'> "
            f"in {worst.get('parent')} reaching {worst.get('right')} px)"
        )
    return problems
