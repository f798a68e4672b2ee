import pytest

from tests.factories import KeyUnitFactory, ResponseFactory


@pytest.mark.django_db
def test_a_response_hangs_off_one_version_through_its_whole_chain():
    response = ResponseFactory()
    version = response.version
    assert response.attempt.version == version
    assert response.attempt.administration.cell.item.family.version == version
    assert response.attempt.administration.cell.level.version == version


@pytest.mark.django_db
def test_key_units_belong_to_their_cells_version():
    unit = KeyUnitFactory()
    assert unit.version == unit.cell.version == unit.cell.item.version
