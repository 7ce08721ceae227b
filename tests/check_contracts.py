#!/usr/bin/env python3
"""Every function the rt/ headers tag [no-alloc] is called by an allocation-counting test.

    check_contracts.py [--list] TEST.cpp...

A tag is a comment holding "[no-alloc"; it covers the declaration right after the comment
block (the identifier before its first "("). A comment holding "all [no-alloc" covers every
declaration below it up to the next blank line. Tags before a class or struct head, a
preprocessor line or a blank line describe a type or a file, not a function, and are not
checked here.

A function counts as called when its name is followed by "(" in one of the TEST files
(comments and string literals removed); a constructor or destructor also when the files
construct its class (`Engine e;`, `Engine{}`, `make_unique<Engine>()`): the destructor runs
at the end of that object's scope in the same test. Names are matched, not types. A
function no test calls must be in EXEMPT below with its reason. Exit 1 with one line per
function that is neither, and for an exemption that no longer matches.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = "[no-alloc"
GROUP_TAG = re.compile(r"\ball\s+\[no-alloc")

# Class::name (or name) -> (why no test calls it, the function whose counted call runs it,
# or None). That caller must itself be called by a test, or the check fails. An exemption
# wins over a same-named function a test calls (names are matched, not types).
EXEMPT = {
    # Private: reachable only through their caller.
    "LogHistogram::clz_nonzero": ("private; the count-leading-zeros instruction of the slot index", "record"),
    "LogHistogram::index_unclamped": ("private; the slot index", "record"),
    "RunStats::record_point": ("private; keeps each series point", "add"),
    "RunStats::note_stall": ("private; opens or extends a stall on a miss", "add"),
    "CpuBackend::run_cascade": ("private; runs each cascade step", "process"),
    "CpuBackend::run_hosted": ("private; runs each hosted (so:) step", "process"),
    "CpuBackend::audited_call": ("private; the timed, audited hosted call", "process"),
    "CpuBackend::name_call": ("private; names each hosted call for the fault handler and the watchdog", "process"),
    "CpuBackend::scan_output": ("private; scans a hosted step's output", "process"),
    "CpuBackend::set_failure": ("private; notes a failed hosted step (the tests' stage never fails)", "process"),
    # A session is PortAudio initialised: the machine's audio host APIs (ALSA, a JACK client
    # and its threads) would run inside the process-wide count.
    "PortAudioSession::ok": ("needs the audio system (a session runs Pa_Initialize)", None),
    "PortAudioSession::error": ("needs the audio system (a session runs Pa_Initialize)", None),
    "PortAudioSession::abandon": ("needs the audio system (a session runs Pa_Initialize)", None),
    "PortAudioSession::~PortAudioSession": ("needs the audio system (runs Pa_Terminate)", None),
}

COMMENT_OR_STRING = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def code_of(text):
    """The text without comments and string or character literals (newlines kept)."""
    return COMMENT_OR_STRING.sub(lambda m: "\n" * m.group(0).count("\n") if m.group(0)[0] == "/" else '""', text)


class Tagged:
    def __init__(self, path, line, name, cls, kind):
        self.path, self.line, self.name, self.cls, self.kind = path, line, name, cls, kind

    def key(self):
        return (self.path, self.cls, self.name)

    def qualified(self):
        return f"{self.cls}::{self.name}" if self.cls else self.name


OPERATOR = re.compile(r"\boperator\s*(\(\)|[^\s(]+)\s*\($")
NAME = re.compile(r"(?:\b(\w+)\s*::\s*)?(~?\s*[A-Za-z_]\w*)\s*(?:<[^<>()]*>)?\s*$")
HEAD = re.compile(r"^(?:template\s*<.*>\s*)?(class|struct|union|enum|namespace)\b\s*(?:class\s+)?(\w+)?")


def declared_name(code):
    """(class qualifier or None, name) of the function a declaration line opens, or None."""
    if "(" not in code:
        return None
    prefix = code[: code.index("(") + 1]
    m = OPERATOR.search(prefix)
    if m:
        return None, "operator" + m.group(1)
    prefix = prefix[:-1]
    if not prefix.strip() or "=" in prefix or prefix.split()[0] in ("return", "static_assert", "using", "typedef"):
        return None  # a variable, an alias or a statement, not a function
    m = NAME.search(prefix)
    if not m:
        return None
    return m.group(1), m.group(2).replace(" ", "")


def scan_header(path):
    """The declarations a [no-alloc tag covers in one header, and the tags that cover none."""
    rel = path.relative_to(ROOT).as_posix()
    found, notes = [], []
    pending = None  # line of a tag waiting for its declaration
    group = False  # inside an "all [no-alloc" group (ends at a blank line)
    scopes = []  # ("ns" | "class" | "code", class name) per open brace
    head = None  # the kind and name the next "{" opens
    stmt_open = False  # a declaration or statement runs on from an earlier line
    in_block_comment = False
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        s = raw.strip()
        if in_block_comment:
            in_block_comment = "*/" not in s
            continue
        if s.startswith("/*"):
            in_block_comment = "*/" not in s
            continue
        if not s:
            if pending:
                notes.append((rel, pending))
            pending, group = None, False
            continue
        if s.startswith("//"):
            if TAG in s:
                if GROUP_TAG.search(s):
                    group = True
                elif not pending:
                    pending = n
            continue
        if s.startswith("#"):
            if pending:
                notes.append((rel, pending))
            pending = None
            continue
        code = code_of(s)
        at_decl_level = all(k != "code" for k, _ in scopes) and not stmt_open
        if at_decl_level and re.match(r"^template\s*<[^()]*>$", code):
            continue  # the declaration follows on the next line
        if at_decl_level and re.match(r"^(public|private|protected)\s*:", code):
            continue
        if at_decl_level and (pending or group):
            h = HEAD.match(code)
            d = None if h else declared_name(code)
            if d is None:
                if pending:
                    notes.append((rel, pending))
            else:
                qual, name = d
                cls = qual or next((c for k, c in reversed(scopes) if k == "class"), None)
                kind = "destructor" if name.startswith("~") else "constructor" if name == cls else "function"
                found.append(Tagged(rel, n, name, cls, kind))
            pending = None
        # follow the braces, so that function bodies are not read as declarations
        h = HEAD.match(code) if not stmt_open else None
        if h:
            head = ("ns" if h.group(1) == "namespace" else "code" if h.group(1) == "enum" else "class", h.group(2))
        elif re.match(r'^extern\s*""\s*\{', code):
            head = ("ns", None)
        for ch in code:
            if ch == "{":
                scopes.append(head or ("code", None))
                head = None
            elif ch == "}":
                if scopes:
                    scopes.pop()
            elif ch == ";" and head and head[0] != "ns":
                head = None  # a forward declaration
        stmt_open = not re.search(r"[;{}]\s*$|^(public|private|protected)\s*:$", code)
    return found, notes


def test_code(test_files):
    return "\n".join(code_of(Path(f).read_text()) for f in test_files)


def constructs(text, cls):
    """True when the text makes an object of class `cls`: `C x;`, `C x(..)`, `C{..}`, `make_unique<C>(..)`."""
    c = re.escape(cls)
    return bool(re.search(r"\b" + c + r"\s*\{|\b" + c + r"\s+[A-Za-z_]\w*\s*[;({=\[,]|<\s*" + c + r"\s*>\s*\(", text))


def is_called(text, t):
    if re.search(r"(?<![\w~])" + re.escape(t.name) + r"\s*(?:<[^;(){}]*?>)?\s*\(", text):
        return True
    if t.kind in ("constructor", "destructor") and t.cls:
        return constructs(text, t.cls)
    return False


def main(argv):
    listing = "--list" in argv
    tests = [a for a in argv if a != "--list"]
    if not tests:
        print("usage: " + __doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    for f in tests:
        if not Path(f).is_file():
            print(f"{Path(__file__).name}: no test file {f}", file=sys.stderr)
            return 2
    headers = sorted(p for p in (ROOT / "rt").rglob("*.hpp"))
    tagged, notes = [], []
    for h in headers:
        f, nt = scan_header(h)
        tagged += f
        notes += nt
    text = test_code(tests)

    # one entry per function: a declaration and its out-of-class definition are one
    unique = {}
    for t in tagged:
        unique.setdefault(t.key(), t)
    funcs = list(unique.values())
    called, exempt, missing, bad_exempt = [], [], [], []
    for t in funcs:
        if t.qualified() in EXEMPT or t.name in EXEMPT:
            reason, caller = EXEMPT.get(t.qualified()) or EXEMPT[t.name]
            if caller and not re.search(r"(?<![\w~])" + re.escape(caller) + r"\s*\(", text):
                bad_exempt.append(f"{t.path}:{t.line}: {t.name} is exempt as run by {caller}, which no test calls")
            exempt.append((t, reason, caller))
        elif is_called(text, t):
            called.append(t)
        else:
            missing.append(t)
    keys = {t.qualified() for t in funcs} | {t.name for t in funcs}
    stale = [k for k in EXEMPT if k not in keys]

    if listing:
        states = {**{id(t): "called" for t in called}, **{id(t): "exempt" for t, _, _ in exempt}}
        for t in funcs:
            print(f"{t.path}:{t.line}: {t.kind} {t.qualified()}: {states.get(id(t), 'MISSING')}")
        for path, line in notes:
            print(f"{path}:{line}: tag on a type or file, not a function")
    for t in missing:
        print(f"{t.path}:{t.line}: {t.name} is tagged [no-alloc] but no allocation-counting test calls it")
    for line in bad_exempt:
        print(line)
    for k in stale:
        print(f"{Path(__file__).name}: the exemption of {k} matches no tagged function: remove it")
    if missing or bad_exempt or stale:
        return 1
    print(f"{len(funcs)} functions tagged [no-alloc] ({len(tagged)} declarations in {len(headers)} headers): "
          f"{len(called)} called by the allocation-counting tests, {len(exempt)} exempt:")
    for t, reason, caller in exempt:
        print(f"  {t.path}:{t.line}: {t.qualified()}: {reason}" + (f"; runs inside {caller}, which a test calls" if caller else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
