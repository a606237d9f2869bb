"""The documentation is tested (issue 23 item 1): every `dtplan` command of the shell blocks of
README.md and docs/*.md is run as a user runs it, and checked against what the text says.

The conventions (stated for writers in README.md, "Test"):

- A shell block is a fenced block marked `sh`, `bash`, `shell` or `console`; its lines that start
  with `dtplan` or `.venv/bin/dtplan` (after an optional `$ ` prompt; a trailing `\\` continues a
  line) are commands. They run through the installed `dtplan` entry point (the console script
  beside this Python; `.venv/bin/dtplan` in the docs is that script), in a subprocess, from the
  checkout (paths like `instances/...` are relative to it). Files the command writes
  (`--report`, `--plot`, `-o`/`--output`, `--write-model`) go to a temporary folder instead of
  the path written, and must exist afterwards.
- Exit code: 0, unless the line ends with a comment naming another (`# exit 1`: infeasible or a
  limit broken; `# exit 2`: bad input shown on purpose). `dtplan serve` runs until stopped: it is
  started (on a free port unless the line names one), must print the address it serves, and is
  then stopped with Ctrl-C (SIGINT), which must give exit 0.
- Figures: the prose paragraph directly after a block says what its commands answer, so every
  figure in it (a number, outside backticks, with its thousands separators, decimals, exponent
  or 10^N, % or the suffixes k, M, B, T) must be a figure the block's commands print, at the
  precision written (2,013.8 matches a printed 2,013.80; 17.67T matches 17.67 T or 1.767e+13),
  or one of their command lines. What the commands are given is said before the block; a figure
  that is not an output goes in backticks or elsewhere. An exit code the prose names ("exit 2")
  is not a figure.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_LANGS = {"sh", "bash", "shell", "console"}
OUTPUT_OPTIONS = {"--report", "--plot", "-o", "--output", "--write-model"}
COMMAND_TIMEOUT_S = 600
SERVER_START_S = 60
# Commands that take tens of seconds (every accelerator's node solved and verified; 500 Monte
# Carlo solves): marked slow, still part of the suite.
SLOW = ("thresholds --compute 16 --memory 1024 --target-flop 1e27", "--monte-carlo 500")


@dataclass
class Command:
    text: str                       # the command as written (continuations joined)
    argv: list[str]                 # after `dtplan`
    exit_code: int = 0
    server: bool = False


@dataclass
class Block:
    doc: Path
    line: int                       # of the opening fence
    commands: list[Command]
    after: str                      # the prose paragraph directly after the block
    id: str = field(init=False)

    def __post_init__(self):
        doc = self.doc.relative_to(REPO) if self.doc.is_relative_to(REPO) else self.doc.name
        self.id = f"{doc}:{self.line}"


def _split_comment(line: str) -> tuple[str, str]:
    """`cmd args  # comment` -> (cmd args, comment), a `#` inside quotes kept."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def _command(text: str) -> Command | None:
    text = text.strip()
    if text.startswith("$ "):
        text = text[2:].lstrip()
    if not re.match(r"(\.venv/bin/)?dtplan(\s|$)", text):
        return None
    body, comment = _split_comment(text)
    words = shlex.split(body)
    code = re.search(r"\bexit (\d)\b", comment)
    return Command(body, words[1:], int(code.group(1)) if code else 0, server=words[1:2] == ["serve"])


def _paragraph_after(lines: list[str], start: int) -> str:
    """The prose paragraph from line `start` on: blank lines skipped, then up to a blank line,
    a fence or a heading."""
    i = start
    while i < len(lines) and not lines[i].strip():
        i += 1
    out = []
    while i < len(lines) and lines[i].strip() and not lines[i].startswith(("```", "#")):
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def doc_blocks(path: Path) -> list[Block]:
    """The shell blocks of one Markdown file that hold dtplan commands."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = re.match(r"```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if fence.group(1) in SHELL_LANGS:
            joined, buf = [], ""
            for raw in lines[i + 1:end]:
                if raw.rstrip().endswith("\\"):
                    buf += raw.rstrip()[:-1] + " "
                    continue
                joined.append(buf + raw)
                buf = ""
            commands = [c for c in map(_command, joined) if c is not None]
            if commands:
                blocks.append(Block(path, i + 1, commands, _paragraph_after(lines, end + 1)))
        i = end + 1
    return blocks


BLOCKS = [b for doc in DOC_FILES for b in doc_blocks(doc)]


# ---- figures ---------------------------------------------------------------------------------

SCALE = {"k": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
_NUMBER = re.compile(
    r"(?<![\w.,/^-])(?<!exit )(?:-)?"                         # not inside a word, path or larger number,
                                                              # nor an exit code named in the prose
    r"(?:(?P<pow>10\^(?P<exp10>\d+))"                         # 10^25
    r"|(?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<dec>\d+))?)(?:[eE](?P<exp>[+-]?\d+))?)"
    r"(?:\s?(?P<suffix>[kMBT])(?![A-Za-z]))?(?P<pct>%)?")


@dataclass(frozen=True)
class Figure:
    text: str
    candidates: tuple[tuple[float, float], ...]   # (value, tolerance): any one may match


def figures(text: str) -> list[Figure]:
    """The figures of a text, each with the values it may stand for at its written precision."""
    out = []
    for m in _NUMBER.finditer(text):
        if m.group("pow"):
            value = 10.0 ** int(m.group("exp10"))
            out.append(Figure(m.group(0), ((value, value * 1e-9),)))
            continue
        mantissa = float(m.group("num").replace(",", ""))
        ulp = 10.0 ** -len(m.group("dec") or "")
        exp = 10.0 ** int(m.group("exp") or 0)
        value, tol = mantissa * exp, 0.5 * ulp * exp * (1 + 1e-9)
        cands = [(value, tol)]
        if m.group("suffix"):
            cands.append((value * SCALE[m.group("suffix")], tol * SCALE[m.group("suffix")]))
        if m.group("pct"):
            cands.append((value / 100, tol / 100))
        out.append(Figure(m.group(0).strip(), tuple(cands)))
    return out


def _printed_values(text: str) -> list[float]:
    values = []
    for f in figures(text):
        values += [v for v, _ in f.candidates]
    return values


def _prose(paragraph: str) -> str:
    """The paragraph without code spans, link targets and HTML comments."""
    paragraph = re.sub(r"<!--.*?-->", " ", paragraph, flags=re.S)
    paragraph = re.sub(r"`[^`]*`", " ", paragraph)
    return re.sub(r"\]\([^)]*\)", "]", paragraph)


def unmatched_figures(paragraph: str, printed: str) -> list[str]:
    """The figures of `paragraph` that no number of `printed` stands for."""
    values = _printed_values(printed)
    missing = []
    for f in figures(_prose(paragraph)):
        if not any(math.isclose(v, value, rel_tol=0, abs_tol=tol) or abs(v - value) <= tol
                   for value, tol in f.candidates for v in values):
            missing.append(f.text)
    return missing


# ---- running ---------------------------------------------------------------------------------

def _entry_point() -> list[str]:
    """The installed `dtplan` console script beside this Python (what `.venv/bin/dtplan` is)."""
    script = Path(sys.executable).parent / "dtplan"
    assert script.exists(), f"no dtplan entry point at {script}: install the package (README, Install)"
    return [str(script)]


def _redirected(argv: list[str], out_dir: Path) -> tuple[list[str], list[Path]]:
    """argv with every output file moved into `out_dir` (same file name), and those files."""
    argv, written = list(argv), []
    for i, word in enumerate(argv):
        flag, eq, value = word.partition("=")
        if flag in OUTPUT_OPTIONS and eq:
            target = out_dir / Path(value).name
            argv[i], written = f"{flag}={target}", written + [target]
        elif word in OUTPUT_OPTIONS and i + 1 < len(argv):
            target = out_dir / Path(argv[i + 1]).name
            argv[i + 1], written = str(target), written + [target]
    return argv, written


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120"}


_RUNS: dict[tuple[str, ...], tuple[int, str]] = {}    # one run per distinct command line


def run_command(cmd: Command, out_dir: Path) -> tuple[int, str]:
    """Exit code and output (stdout, then stderr) of one documented command."""
    key = tuple(cmd.argv)
    if key not in _RUNS:
        argv, written = _redirected(cmd.argv, out_dir)
        proc = subprocess.run(_entry_point() + argv, cwd=REPO, capture_output=True, text=True, env=_env(),
                              timeout=COMMAND_TIMEOUT_S)
        if proc.returncode in (0, 1):
            missing = [str(p) for p in written if not p.exists()]
            assert not missing, f"{cmd.text}: wrote none of {missing}"
        _RUNS[key] = proc.returncode, proc.stdout + "\n" + proc.stderr
    return _RUNS[key]


def run_server(cmd: Command) -> tuple[int, str]:
    """Start a server command, wait for the address it prints, stop it with Ctrl-C (on a free port
    unless the docs name one)."""
    argv = cmd.argv if "--port" in cmd.argv else [*cmd.argv, "--port", "0"]
    proc = subprocess.Popen(_entry_point() + argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=_env())
    lines, deadline = [], time.monotonic() + SERVER_START_S
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "http://" in line:
                break
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rest, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
    output = "".join(lines) + (rest or "")
    assert "http://" in output, f"{cmd.text}: printed no address\n{output[-2000:]}"
    return proc.returncode, output


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("doc-outputs")


def _param(block: Block):
    slow = any(s in c.text for c in block.commands for s in SLOW)
    return pytest.param(block, id=block.id, marks=[pytest.mark.slow] if slow else [])


def test_the_docs_hold_commands():
    readme = [b for b in BLOCKS if b.doc.name == "README.md"]
    assert len(readme) >= 8 and sum(len(b.commands) for b in BLOCKS) >= 20


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_documented_command(block, out_dir):
    printed = []
    for cmd in block.commands:
        code, output = run_server(cmd) if cmd.server else run_command(cmd, out_dir)
        assert "Traceback" not in output and "internal error" not in output, f"{cmd.text}\n{output[-3000:]}"
        assert code == cmd.exit_code, f"{block.id}: {cmd.text} exited {code}, the docs say {cmd.exit_code}\n" \
                                      f"{output[-3000:]}"
        printed += [cmd.text, output]
    missing = unmatched_figures(block.after, "\n".join(printed))
    assert not missing, f"{block.id}: figures of the paragraph after the block that the commands do not " \
                        f"print: {missing}\n--- paragraph:\n{block.after}"


# ---- the conventions themselves ----------------------------------------------------------------

def test_commands_are_read_with_their_exit_code_continuations_and_prompts(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("```console\n$ dtplan solve a.json --report /tmp/r.html   # exit 1\n"
                   ".venv/bin/dtplan sweep b.json --vary \"x=uniform(1, 2)\" \\\n    -o out.csv\n"
                   "dtplan serve            # then open the page\npython -m pytest\n```\n\n"
                   "It takes 2,013.8 days.\nSecond line 5%.\n\nNot this 7.\n"
                   "```json\n{\"dtplan solve\": 1}\n```\n")
    (block,) = doc_blocks(doc)
    assert [c.argv for c in block.commands] == [["solve", "a.json", "--report", "/tmp/r.html"],
                                                ["sweep", "b.json", "--vary", "x=uniform(1, 2)", "-o", "out.csv"],
                                                ["serve"]]
    assert [(c.exit_code, c.server) for c in block.commands] == [(1, False), (0, False), (0, True)]
    assert block.after == "It takes 2,013.8 days.\nSecond line 5%."
    argv, written = _redirected(block.commands[0].argv, tmp_path)
    assert argv[-1] == str(tmp_path / "r.html") and written == [tmp_path / "r.html"]
    assert _redirected(["sweep", "-o=x/y.csv"], tmp_path)[0] == ["sweep", f"-o={tmp_path / 'y.csv'}"]


def test_figures_match_at_the_precision_written():
    printed = "time to target 2,013.80 days; in 547.9 days: tokens 17.67 T; C_local 2.650e+24; idle 5.5%\n" \
              "eta = 0.1735; 1.037e+25 FLOP"
    assert unmatched_figures("needs 2,013.8 days, 17.67T tokens, eta = 0.17, C_local = 2.65e24 of "
                             "1.037e25 FLOP and 10^25 is not printed, nor 2,013.9 or 5.6%, while 5.5% is", printed) \
        == ["10^25", "2,013.9", "5.6%"]
    assert unmatched_figures("`--max-days 90` and [a link](docs/x2.md) and H100 and fp8 are not figures", "") == []
    assert unmatched_figures("a 0.18 share", "0.1735") == ["0.18"]
    assert unmatched_figures("1.5 years", "1.5") == []
    assert unmatched_figures("bad input exits 2; then exit 2 or exit 0", "") == ["2"]


def test_readme_python_blocks_run():
    """The README's Python examples run as written, from the checkout."""
    blocks = re.findall(r"^```python\n(.*?)^```", (REPO / "README.md").read_text(), flags=re.S | re.M)
    assert blocks
    for code in blocks:
        proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{code}\n{proc.stderr[-2000:]}"
