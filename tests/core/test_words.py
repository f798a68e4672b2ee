from apps.core.words import counted


def test_a_count_takes_the_singular_only_for_one():
    assert counted(1, "problem") == "1 problem"
    assert counted(2, "problem") == "2 problems"
    assert counted(0, "problem") == "0 problems"
    assert counted(1_526, "task") == "1,526 tasks"
    assert counted(3, "family", "families") == "3 families"
