"""The README's test command is the one CI runs (``.ci/run`` ends with it)."""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci_lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()
                if ln.strip() and not ln.lstrip().startswith("#")]
    command = ci_lines[-1]
    assert command == "python -m pytest -q && lit -q tests/ir"
    quickstart = next(ln for ln in readme.splitlines() if "pytest" in ln and ln.startswith("pip install"))
    assert quickstart.endswith("&& " + command)
