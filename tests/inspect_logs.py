"""Inspect AI logs written by inspect_ai itself, for the machine-score tests and benchmark.

``python -m tests.inspect_logs <directory> [samples]`` runs one task with ``inspect_ai.eval``
on ``mockllm/model`` (no network: a local solver writes each output, so no model is called):
samples ``xs-1``… , two epochs, and two scorers — Inspect's ``includes()`` and the
documentation's multi-value example, ``letter_count`` (``Score(value={"a_count": …,
"e_count": …})``, https://inspect.aisi.org.uk/scorers.html#multiple-scorers). Then, as
``inspect score --action append`` does, ``inspect_ai.score`` appends an LLM judge's scorer
``judge`` (its grader model and template are parameters the log records) twice, into two
files: graded by ``mockllm/grader`` (``appended.eval``) and by ``mockllm/grader-2``
(``other_grader.eval``). The judge says C on epoch 1 and I on epoch 2.

The logs are slow to write (inspect_ai's start-up, about ten seconds); ``written_logs`` writes
them once per test session (``tests/raters/conftest.py``). No Django imports.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SAMPLES = ("xs-1", "xs-2", "xs-3")
GRADER = "mockllm/grader"
TEMPLATE = "Grade the answer {answer} to {question}: reply GRADE: C or GRADE: I."
# The completion of each epoch: letter counts that differ by epoch (a: 4 then 2).
COMPLETIONS = {1: "a banana, Default", 2: "an apple pie, Default here"}


def completion(epoch: int) -> str:
    return COMPLETIONS[1 if epoch % 2 else 2]


def write(directory: Path, samples: int = len(SAMPLES)) -> None:
    from inspect_ai import Epochs, Task, score
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import write_eval_log
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import (
        CORRECT,
        INCORRECT,
        Score,
        Target,
        accuracy,
        includes,
        mean,
        scorer,
        stderr,
    )
    from inspect_ai.solver import TaskState, solver

    @solver
    def canned():
        async def solve(state: TaskState, generate):
            state.output = ModelOutput.from_content("mockllm/model", completion(state.epoch))
            return state

        return solve

    # Inspect's documented multi-value scorer (scorers.html, "Multiple Scorers").
    @scorer(metrics={"a_count": [mean(), stderr()], "e_count": [mean(), stderr()]})
    def letter_count():
        async def score(state: TaskState, target: Target):
            answer = state.output.completion
            a_count = answer.count("a")
            e_count = answer.count("e")
            return Score(value={"a_count": a_count, "e_count": e_count}, answer=answer)

        return score

    @scorer(metrics=[accuracy()])
    def judge(model: str = GRADER, template: str = TEMPLATE):
        async def score(state: TaskState, target: Target):
            verdict = CORRECT if state.epoch == 1 else INCORRECT
            return Score(value=verdict, explanation=f"graded by {model}")

        return score

    names = SAMPLES if samples == len(SAMPLES) else [f"s-{n}" for n in range(1, samples + 1)]
    task = Task(
        # The second sample's target is in no completion: includes() says I for it.
        dataset=[
            Sample(id=name, input=f"Question {name}", target="Refusal" if n == 1 else "Default")
            for n, name in enumerate(names)
        ],
        solver=[canned()],
        scorer=[includes(), letter_count()],
        epochs=Epochs(2, "mean"),
    )
    (log,) = inspect_eval(
        task, model="mockllm/model", log_dir=str(directory / "runs"), display="none"
    )
    write_eval_log(log, str(directory / "two_scorers.eval"))
    for name, grader in (("appended", GRADER), ("other_grader", f"{GRADER}-2")):
        graded = score(log, judge(model=grader, template=TEMPLATE), action="append")
        write_eval_log(graded, str(directory / f"{name}.eval"))


def written_logs(directory: Path, samples: int = len(SAMPLES)) -> dict[str, Path]:
    """Write the logs into ``directory`` in a child process (inspect_ai sets up its own
    logging and event loop); ``{name: path}`` for two_scorers, appended and other_grader."""
    subprocess.run(
        [sys.executable, "-m", "tests.inspect_logs", str(directory), str(samples)],
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
    )
    return {
        name: directory / f"{name}.eval" for name in ("two_scorers", "appended", "other_grader")
    }


if __name__ == "__main__":
    write(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else len(SAMPLES))
