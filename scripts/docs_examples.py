#!/usr/bin/env python3
"""Run the example commands of README.md and docs/profiler.md and check or regenerate the
output they show.

An example is a fenced code block with `$ COMMAND` lines; the lines after a command, up to
the next `$` line, are the output the document shows for it. Every example of a document
runs in order, as a reader would type it, in one fresh folder that holds `build/` (the
build under test), `audio/`, `include/`, `examples/`, `scripts/` and `tests/` of the
source tree, `out/` not yet made; `chunkscope` on PATH is the build's binary. A marker
comment on the line before a block changes that:

    <!-- example: not run: REASON -->   the block is left alone (it needs a GPU, a profiler
                                         or the build itself); --check lists it with REASON
    <!-- example: file NAME -->          the block (a source file) is written to NAME first
    <!-- example: continues -->          the block (no `$` line) shows more of the previous
                                         command's output, after a cut

--check (the test) fails when a command exits with anything but 0 (or 1 for a run that
asks for a verdict with --fail-on-miss / --fail-on-unsafe, or N for a command the document
ends with the comment `# exit N`: a refusal it shows), or when its shown output no
longer has the real output's shape: a labelled row the document shows ("headline   ...",
"  wake   ...", a JSON "key":) that the command no longer prints, or a labelled row the
command now prints inside a stretch the document shows whole (a `...` line marks a cut).
Rows that appear only when their event happens (ROWS_ON_EVENT) are exempt.

--write (make docs-examples) replaces every shown line with the line the command printed
now, keeping the document's cuts: a stretch shown whole is shown whole again, new rows
included; a `...` stays where it was.

    docs_examples.py --check|--write --build BUILD_DIR [--source DIR] DOC.md...
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Rows a run prints only when what they report happened (late chunks, stalls, a blamed
# stream, hosted steps' audit findings, the exit note under a not-safe headline): whether a
# run on a busy machine prints them is not the document's shape.
# ... and the split of processing by the scheduler's record, which a kernel may refuse (and a
# row 0 for every chunk is named under the table instead)
ROWS_ON_EVENT = {"stalls", "blame", "late", "platform", "slowest", "worst", "dropped", "exit", "on-cpu", "preempt",
                 "blocked", "off-cpu"}

FENCE = re.compile(r"^```")
MARKER = re.compile(r"^<!--\s*example:\s*(not run|file|continues)\s*:?\s*(.*?)\s*-->\s*$")
LABEL = re.compile(r"^\s*([a-z][a-z0-9_-]*(?: [a-z][a-z0-9_-]*)?)\*? {2,}\S")  # `queue_out*`: a marked row
JSON_KEY = re.compile(r'^\s*"([^"]+)":')
NUMBER = re.compile(r"[-+]?[0-9][0-9.,:]*")
CUT = "..."
PART = "\0part"  # between the blocks of one command's output: a cut


class Example:
    """One `$` command of a document: where its lines are, and the output it shows (in one
    block, or that block and the `continues` blocks after it)."""

    def __init__(self, line, command, shown, span):
        self.line = line          # 1-based line of the `$`
        self.command = command    # continuation lines joined
        self.parts = [(span, shown)]  # per block: (first, end) indexes in the document, lines

    def shown(self):
        out = []
        for k, (_, lines) in enumerate(self.parts):
            out += ([PART] if k else []) + lines
        return out


def parse(lines):
    """The document's examples in order, its `file` blocks and its `not run` blocks."""
    examples, files, skipped = [], [], []
    i = 0
    while i < len(lines):
        if not FENCE.match(lines[i]):
            i += 1
            continue
        end = next((k for k in range(i + 1, len(lines)) if FENCE.match(lines[k])), len(lines))
        prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = MARKER.match(prev)
        body = list(range(i + 1, end))
        if marker and marker.group(1) == "file":
            files.append((i + 1, marker.group(2), [lines[k] for k in body]))
        elif marker and marker.group(1) == "continues" and examples:
            examples[-1].parts.append(((i + 1, end), [lines[k] for k in body]))
        elif any(lines[k].startswith("$ ") for k in body):
            if marker:
                skipped.append((i + 2, marker.group(2)))
            else:
                examples.extend(parse_block(lines, body))
        i = end + 1
    return examples, files, skipped


def parse_block(lines, body):
    out, k = [], 0
    while k < len(body):
        idx = body[k]
        if not lines[idx].startswith("$ "):
            k += 1
            continue
        command = lines[idx][2:]
        while command.endswith("\\") and k + 1 < len(body):
            k += 1
            command = command[:-1].rstrip() + " " + lines[body[k]].strip()
        first = k + 1
        while k + 1 < len(body) and not lines[body[k + 1]].startswith("$ "):
            k += 1
        shown_idx = body[first:k + 1]
        span = (shown_idx[0], shown_idx[-1] + 1) if shown_idx else (body[first - 1] + 1,) * 2
        out.append(Example(idx + 1, command, [lines[j] for j in shown_idx], span))
        k += 1
    return out


def skeleton(line):
    """What a shown line must still be: its first word, numbers as '#', and for a word its
    indentation (a step's own line and its row in the stage table are not the same line);
    a line that starts with a number adds its second word's shape (a histogram bin,
    `5080 .. 5100 µs`, is not a ranked row, `1.  7.210 ms`). None for the program's own
    messages (`chunkscope: ...`, on stderr): which of them a run prints, and where among
    the rows, depends on the run, so they take no part in matching."""
    words = line.split()
    if not words:
        return ""
    if words[0] == "chunkscope:":
        return None
    first = NUMBER.sub("#", words[0])
    if first.startswith("#"):
        return first + (" " + NUMBER.sub("#", words[1]) if len(words) > 1 else "")
    return f"{len(line) - len(line.lstrip())}:{first}"


def label(line):
    m = LABEL.match(line) or JSON_KEY.match(line)
    return m.group(1) if m else None


def match_segment(segment, real, pos, after_cut):
    """Where each line of a stretch shown whole (between cuts) is in the real output, from pos
    on: the in-order matching of lines of the same shape that matches the most lines; among
    those, the one that passes over the fewest labelled rows once the stretch has begun (a
    stretch after a cut may begin anywhere; one that is not begins at pos), so a line is not
    matched to a look-alike further on; then the lines most alike (so a shown `stage 2 ...` is
    the real `stage 2 ...`, not the `stage 1 ...` before it). Returns a real index or None
    per shown line."""
    m, n = len(segment), len(real) - pos
    keys = [skeleton(x) for x in segment]
    rkeys = [skeleton(x) for x in real[pos:]]
    counted = [bool(label(x)) and label(x) not in ROWS_ON_EVENT for x in real[pos:]]

    def like(i, j):
        return difflib.SequenceMatcher(None, segment[i], real[pos + j]).ratio()

    def skip_real(i, j):  # the score of passing over real line j
        s = best[i][j + 1]
        return (s[0], s[1] - (1 if counted[j] and (i > 0 or not after_cut) else 0), s[2])

    def take(i, j):  # the score of matching shown line i with real line j
        s = best[i + 1][j + 1]
        return (s[0] + 1, s[1], s[2] + like(i, j))

    # best[i][j]: (matched, -labelled rows passed over, likeness) for segment[i:] against real[pos + j:]
    best = [[(0, 0, 0.0)] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            choice = max(best[i + 1][j], skip_real(i, j))
            if keys[i] is not None and keys[i] == rkeys[j]:
                choice = max(choice, take(i, j))
            best[i][j] = choice
    out, i, j = [], 0, 0
    while i < m:
        if j < n and keys[i] is not None and keys[i] == rkeys[j] and best[i][j] == take(i, j):
            out.append(pos + j)
            i, j = i + 1, j + 1
        elif j < n and best[i][j] == skip_real(i, j):
            j += 1
        else:
            out.append(None)
            i += 1
    return out


def align(shown, real):
    """Rewrite the shown lines from the real output, keeping the cuts. Returns the new lines,
    the shown labels the real output lacks, and the real labels new inside whole stretches.
    Blank lines that end the shown output (before the next `$` line) stay."""
    result, missing, new = [], [], []
    n_blank = 0
    while n_blank < len(shown) and not shown[len(shown) - 1 - n_blank].strip():
        n_blank += 1
    shown = shown[:len(shown) - n_blank]
    is_cut = [x.strip() == CUT or x == PART for x in shown]
    pos, k = 0, 0
    while k < len(shown):
        if is_cut[k]:
            result.append(shown[k])
            k += 1
            continue
        end = next((e for e in range(k, len(shown)) if is_cut[e]), len(shown))
        segment = shown[k:end]
        after_cut = k > 0  # a stretch after a cut starts where its first line is
        for line, j in zip(segment, match_segment(segment, real, pos, after_cut)):
            if j is None:
                if label(line) and label(line) not in ROWS_ON_EVENT:
                    missing.append(label(line))
                continue
            if after_cut:
                result.append(real[j])
                after_cut = False
            else:
                between = real[pos:j]
                new += [label(r) for r in between if label(r) and label(r) not in ROWS_ON_EVENT]
                result.extend(between + [real[j]])
            pos = j + 1
        # messages the stretch ends with (before a cut): the ones the run printed there
        if end < len(shown) and skeleton(segment[-1]) is None:
            while pos < len(real) and skeleton(real[pos]) is None:
                result.append(real[pos])
                pos += 1
        k = end
    if shown and not is_cut[-1] and real[pos:]:
        new += [label(r) for r in real[pos:] if label(r) and label(r) not in ROWS_ON_EVENT]
        result.extend(real[pos:])
    return result + [""] * n_blank, missing, new


def split_parts(ex, result):
    """The aligned lines back into the command's blocks, as (span, lines) edits."""
    chunks, cur = [], []
    for r in result:
        if r == PART:
            chunks.append(cur)
            cur = []
        else:
            cur.append(r)
    chunks.append(cur)
    return [(span, lines) for (span, _), lines in zip(ex.parts, chunks)]


def make_folder(build, source):
    work = tempfile.mkdtemp(prefix="chunkscope-docs.")
    os.symlink(os.path.abspath(build), os.path.join(work, "build"))
    for name in ("audio", "include", "examples", "scripts", "tests"):
        os.symlink(os.path.join(os.path.abspath(source), name), os.path.join(work, name))
    os.mkdir(os.path.join(work, ".bin"))
    os.symlink(os.path.join(os.path.abspath(build), "chunkscope"), os.path.join(work, ".bin", "chunkscope"))
    return work


def run(command, work):
    env = dict(os.environ)
    env["PATH"] = os.path.join(work, ".bin") + os.pathsep + env.get("PATH", "")
    env.pop("COLUMNS", None)
    # the examples are written for the default plugin search paths; a command that wants
    # another sets it itself (LV2_PATH=... chunkscope ...)
    env.pop("LV2_PATH", None)
    env.pop("LADSPA_PATH", None)
    # stdbuf preloads its library; a sanitizer build must be told that it need not come first
    env["ASAN_OPTIONS"] = ":".join(x for x in (env.get("ASAN_OPTIONS"), "verify_asan_link_order=0") if x)
    # line-buffered so that stdout and stderr interleave as on a terminal
    proc = subprocess.run(["stdbuf", "-oL", "-eL", "bash", "-c", command], cwd=work, env=env,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = proc.stdout.decode("utf-8", "replace").replace(work + "/", "").replace(work, ".")
    return proc.returncode, text.splitlines()


EXPECTED_EXIT = re.compile(r"#\s*exit\s+([0-9]+)\s*$")


def exit_allowed(command, rc):
    """0; 1 for a run that asks for a verdict; N for a command the document ends with `# exit N`
    (a refusal it shows)."""
    expected = EXPECTED_EXIT.search(command)
    if expected:
        return rc == int(expected.group(1))
    return rc == 0 or (rc == 1 and ("--fail-on-miss" in command or "--fail-on-unsafe" in command))


def process_doc(path, build, source, write):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    examples, files, skipped = parse(lines)
    name = os.path.relpath(path)
    if name.startswith(".."):
        name = path
    work = make_folder(build, source)
    problems, edits = 0, []
    try:
        file_at = {line: (fname, body) for line, fname, body in files}
        pending = sorted(file_at)
        for ex in examples:
            while pending and pending[0] < ex.line:
                fname, body = file_at[pending.pop(0)]
                with open(os.path.join(work, fname), "w", encoding="utf-8") as f:
                    f.write("\n".join(body) + "\n")
            rc, real = run(ex.command, work)
            where = f"{name}:{ex.line}"
            if not exit_allowed(ex.command, rc):
                print(f"{where}: FAILED (exit {rc}): {ex.command}")
                for r in real[-5:]:
                    print(f"    {r}")
                problems += 1
                continue
            result, missing, new = align(ex.shown(), real)
            for m in missing:
                print(f"{where}: the document shows a '{m}' row that the command no longer prints: {ex.command}")
            for n in new:
                print(f"{where}: the command now prints a '{n}' row the document does not show: {ex.command}")
            if not write:
                problems += len(missing) + len(new)
            print(f"{where}: ran (exit {rc}): {ex.command}")
            edits += split_parts(ex, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line, reason in skipped:
        print(f"{name}:{line}: not run ({reason})")
    if write and not problems:
        for (first, end), result in sorted(edits, reverse=True):
            lines[first:end] = result
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        os.replace(tmp, path)
        print(f"{name}: wrote the output of {len(edits)} command(s)")
    return problems, len(examples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--write", action="store_true")
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("docs", nargs="+")
    args = ap.parse_args()
    total = ran = 0
    for doc in args.docs:
        problems, count = process_doc(doc, args.build, args.source, args.write)
        total += problems
        ran += count
    if ran == 0:
        print("docs examples: found no example to run")
        return 1
    print(f"docs examples: {ran} command(s), {total} problem(s)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
