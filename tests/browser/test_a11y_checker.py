"""The accessibility check can fail: on pages made to break each rule it names the culprit."""

import pytest

from tests.browser.a11y import accessibility_problems

pytestmark = pytest.mark.browser


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    yield context.new_page()
    context.close()


def test_a_labelled_narrow_page_passes(page):
    page.set_content(
        '<!doctype html><meta name="viewport" content="width=device-width">'
        '<label for="a">A</label><input id="a" name="a">'
        '<label>B <select name="b"><option>x</option></select></label>'
        '<textarea name="c" aria-label="C"></textarea><input type="hidden" name="d">'
    )
    assert accessibility_problems(page) == []


def test_an_unlabelled_control_and_a_wide_element_are_named(page):
    page.set_content(
        '<!doctype html><meta name="viewport" content="width=device-width">'
        '<input name="lonely" id="lonely"><div class="wide" style="width:600px">wide</div>'
    )
    problems = accessibility_problems(page)
    assert problems[0] == "unlabelled input[name=lonely]#lonely"
    assert "at 375 px the page is 6" in problems[1] and "class='wide'" in problems[1]
    assert page.viewport_size["width"] == 1280


def test_hidden_text_escaping_a_scrolling_box_is_found(page):
    box = '<div style="overflow-x:auto{}"><div style="width:600px">'
    box += '<span style="display:inline-block;width:550px">wide</span><span class="sr" '
    box += 'style="position:absolute;width:1px;height:1px;overflow:hidden">x</span>'
    box += "</div></div>"
    page.set_content(
        '<!doctype html><meta name="viewport" content="width=device-width">' + box.format("")
    )
    problems = accessibility_problems(page)
    assert len(problems) == 1 and "class='sr'" in problems[0]
    # Positioned, the scrolling box holds the hidden text in.
    page.set_content(
        '<!doctype html><meta name="viewport" content="width=device-width">'
        + box.format(";position:relative")
    )
    assert accessibility_problems(page) == []


def test_low_contrast_text_is_named_with_its_ratio(page):
    page.set_content(
        '<!doctype html><meta name="viewport" content="width=device-width">'
        '<p style="color:#777">grey on white</p>'
        '<div style="background:#1b1f24"><span style="color:#fff">white on ink</span></div>'
        '<h1 style="color:#888;font-size:32px">large grey</h1>'
    )
    problems = accessibility_problems(page)
    # #777 on white is 4.48:1, just under AA; white on the header's ink passes; #888 is 3.54:1,
    # enough for large text only.
    assert problems == ['low contrast p. "grey on white" 4.48:1']
