"""The docs are served as pages: what "see the import formats" links to; nothing else is."""

import pytest

from apps.responses.forms import EvaluandForm

pytestmark = pytest.mark.django_db


def test_a_docs_page_renders_with_its_links_and_images_rewritten(client, pi):
    client.force_login(pi)
    response = client.get("/docs/import-formats/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<h1" in html and "Import formats" in html
    assert "<table>" in html  # the Markdown tables are rendered


@pytest.mark.parametrize(
    "path",
    ["/docs/../README/", "/docs/nothing-here/", "/docs/img/../../manage.py", "/docs/img/x.svg"],
)
def test_only_files_of_docs_are_served(client, path):
    assert client.get(path).status_code == 404


def test_the_import_pages_link_to_the_formats_page(client, pi, frozen):
    client.force_login(pi)
    url = f"/protocols/{frozen.protocol.code}/v/{frozen.label}/responses/import/"
    assert 'href="/docs/import-formats/"' in client.get(url).content.decode()


def test_an_empty_json_field_starts_empty_not_null():
    html = str(EvaluandForm()["safeguards"])
    assert ">null<" not in html and 'value="null"' not in html
