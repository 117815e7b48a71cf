#!/usr/bin/python3
"""Shapes of test code that can never fail, found heuristically.

    testlint.py FILE...

Bats and bash files (.bats, .bash):
  - an `&&` chain of assertions that is not the last command of its
    function: bats' errexit ignores a failure on the left of `&&`, so
    `[ a ] && [ b ]` in mid-body checks only b;
  - a bare `! cmd` line: errexit ignores a negated pipeline;
  - a pipe into `grep -q`: grep leaves at the first match, the writer
    on its left may die of SIGPIPE, and pipefail fails the test at
    random (grepq in common.bash reads all of its input);
  - `|| true` (or `|| :`) after a comparison or one of its sides (test,
    grep, cmp, diff, fsck_clean, list, tar): it hides the failure of
    either; `|| [ $? -eq 1 ]` says which status is fine;
  - a `run` (not `run -N`, not `run !`) in a test body whose $status,
    $output, $lines and $stderr nothing reads before the next `run` or
    the end of the test (a helper's leaves them to its caller);
  - a .bats file that does not load tests/lib/common.bash (directly or
    through a helper it loads), which sets pipefail.
C files (cmocka):
  - a bare `return;` in a test body (a function taking `void **state`)
    before any assertion and not right after skip(): the test passes
    having checked nothing; skip() says so;
  - the same in a helper (a void function) that asserts after it: the
    test that calls it passes having checked nothing.

Prints one line per finding, FILE:LINE: what: the line; exits 1 when
there is any, 0 otherwise.
"""

import os
import re
import sys

ASSERTS = {'[', '[[', 'test', 'grep', 'cmp', 'diff', '!', 'fsck_clean'}
# commands whose failure is the finding (or one side of a comparison)
COMPARES = {'[', '[[', 'test', 'grep', 'grepq', 'egrep', 'fgrep', 'cmp',
            'diff', 'fsck_clean', 'list', 'tar'}
PREFIXES = ('then', 'do', 'else')
CONDITIONS = ('if', 'elif', 'while', 'until')


def strip_heredocs(lines):
    """The lines with the bodies of here-documents blanked."""
    out, end, strip = [], None, False
    for line in lines:
        if end is not None:
            text = line.lstrip('\t') if strip else line
            out.append('')
            if text.rstrip('\n') == end:
                end = None
            continue
        out.append(line)
        m = re.search(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2",
                      line.replace('<<<', '   '))
        if m:
            strip, end = m.group(1) == '-', m.group(3)
    return out


class Scanner:
    """Splits shell text into commands and their top-level operators.

    Just enough of the shell's lexing for test files: quotes, $( ),
    ${ }, [[ ]], comments and backslashes; ( and { that open a block at
    the end of a line end the command there.
    """

    def __init__(self):
        self.stack = []

    def pending(self):
        return bool(self.stack)

    def scan(self, text):
        """Yields (kind, value): ('word', w), ('op', '&&'/'||'/';'/'|')."""
        i, n, word = 0, len(text), ''
        while i < n:
            c = text[i]
            top = self.stack[-1] if self.stack else None
            if top == "'":
                if c == "'":
                    self.stack.pop()
                word += c
                i += 1
                continue
            if c == '\\':
                word += text[i:i + 2]
                i += 2
                continue
            if top == '"':
                if c == '"':
                    self.stack.pop()
                elif text.startswith('$(', i):
                    self.stack.append('(')
                    word += c
                    i += 1
                elif text.startswith('${', i):
                    self.stack.append('{')
                    word += c
                    i += 1
                word += c
                i += 1
                continue
            if c in '\'"':
                self.stack.append(c)
                word += c
                i += 1
                continue
            if text.startswith('$(', i) or text.startswith('${', i) or \
               (c in '<>' and text.startswith('(', i + 1)):
                self.stack.append(text[i + 1])
                word += text[i:i + 2]
                i += 2
                continue
            if top in ('(', '{', '[['):
                close = {'(': ')', '{': '}', '[[': ']]'}[top]
                if text.startswith(close, i):
                    self.stack.pop()
                    word += close
                    i += len(close)
                    continue
                if c == '(':
                    self.stack.append('(')
                elif c == '#' and (not word or word[-1] in ' \t'):
                    break
                word += c
                i += 1
                continue
            # the command level
            if c == '#' and not word:
                break
            if c in ' \t\n':
                if word:
                    yield ('word', word)
                    word = ''
                i += 1
                continue
            if text.startswith('[[', i) and not word:
                self.stack.append('[[')
                word = '[['
                i += 2
                continue
            for op in ('&&', '||', ';;', ';', '|', '&'):
                if text.startswith(op, i):
                    break
            else:
                op = None
            if op:
                if word:
                    yield ('word', word)
                    word = ''
                yield ('op', op)
                i += len(op)
                continue
            word += c
            i += 1
        if word:
            yield ('word', word)


def first_word(words):
    """The command word of a simple command; None for a condition."""
    while words and words[0] in PREFIXES:
        words = words[1:]
    if words and words[0] in CONDITIONS:
        return None
    if words and words[0] == '{':
        words = words[1:]
    return words[0] if words else None


def pipe_into_grep_q(words):
    """`... | grep -q ...`: an option of that grep holds q."""
    for i, w in enumerate(words[:-1]):
        if w != '|' or words[i + 1] != 'grep':
            continue
        for opt in words[i + 2:]:
            if opt == '--' or not opt.startswith('-'):
                break
            if not opt.startswith('--') and 'q' in opt[1:]:
                return True
            if opt in ('--quiet', '--silent'):
                return True
    return False


def pipe_heads(words):
    """The command words of each command of a pipeline."""
    heads = [first_word(words)]
    for i, w in enumerate(words[:-1]):
        if w == '|':
            heads.append(first_word(words[i + 1:]))
    return heads


RUN = re.compile(r'\s*(?:(?:then|do|else|\{)\s+)?run(\s+(\S+)|\s*$)')
RESULT = re.compile(r'\$\{?#?(status|output|lines|stderr)\b|'
                    r'\$\(\(.*\bstatus\b')


def in_test(lines, i):
    """Whether line @i is in the body of a @test (not of a function)."""
    for j in range(i, -1, -1):
        if lines[j].startswith('@test'):
            return True
        if re.match(r'(function\s+)?[\w-]+\s*\(\)\s*\{?\s*$', lines[j]):
            return False
    return False


def run_findings(lines):
    """`run CMD` whose status, output and lines nothing reads before the
    next `run` or the end of its function (where, as its last command, it
    leaves them to the caller); `run -N` and `run !` check the status."""
    found = []
    for i, line in enumerate(lines):
        m = RUN.match(line)
        if not m or (m.group(2) and re.match(r'-\d+$|!$', m.group(2))):
            continue
        end = i
        while lines[end].rstrip().endswith('\\') and end + 1 < len(lines):
            end += 1
        read = False
        for j in range(end + 1, len(lines)):
            text = lines[j]
            if text.startswith('}'):
                # a helper's run: its result is the caller's to check
                read = not in_test(lines, i)
                break
            if RUN.match(text):
                break
            if RESULT.search(text):
                read = True
                break
        if not read:
            found.append((i + 1, 'a `run` whose status nothing checks '
                          '(nor its output): check $status, or run the '
                          'command plainly', line.strip()))
    return found


def shell_findings(path, raw):
    lines = strip_heredocs(raw)
    found = []
    sc = Scanner()
    i = 0
    while i < len(lines):
        start = i
        tokens = []
        while True:
            tokens += list(sc.scan(lines[i]))
            i += 1
            cont = sc.pending() or lines[i - 1].rstrip().endswith('\\') or \
                (tokens and tokens[-1][0] == 'op' and
                 tokens[-1][1] in ('&&', '||', '|'))
            if not cont or i >= len(lines):
                break
        if sc.pending():
            sc.stack = []
        nxt = i
        while nxt < len(lines) and \
                re.match(r'\s*(#.*)?$', lines[nxt]):
            nxt += 1
        last_in_function = nxt < len(lines) and lines[nxt].strip() == '}'
        text = ' '.join(l.strip() for l in raw[start:i])
        # statements: split at ; and & (a chain: its words between && and ||)
        stmts, cur = [], [[]]
        ops = []
        for kind, val in tokens + [('op', ';')]:
            if kind == 'op' and val in (';', ';;', '&'):
                stmts.append((cur, ops))
                cur, ops = [[]], []
            elif kind == 'op' and val in ('&&', '||'):
                cur.append([])
                ops.append(val)
            elif kind == 'op':
                cur[-1].append('|')
            else:
                cur[-1].append(val)
        for segs, ops in stmts:
            # `a && { b || true; }`: what the || rescues starts at {
            rescued = segs[:-1]
            for k in range(len(rescued) - 1, 0, -1):
                if rescued[k][:1] == ['{']:
                    rescued = rescued[k:]
                    break
            if ops and ops[-1] == '||' and \
                    first_word(segs[-1]) in ('true', ':') and \
                    any(w in COMPARES for s in rescued
                        for w in pipe_heads(s)):
                found.append((start + 1, '`|| true` after a comparison '
                              '(it hides the failure of either side: '
                              'check the status the command must give)',
                              text))
            if any(pipe_into_grep_q(s) for s in segs):
                found.append((start + 1, 'a pipe into `grep -q` (grep '
                              'leaves at the first match and the writer '
                              'dies of SIGPIPE, which pipefail reports: '
                              'use grepq)', text))
            heads = [first_word(s) for s in segs]
            if not heads or heads[0] is None:
                continue
            if heads[0] == '!' and not ops:
                found.append((start + 1, 'bare `! cmd` (errexit ignores '
                              'it: use run and check $status, or '
                              '`if cmd; then false; fi`)', text))
            elif ops and '||' not in ops and heads[0] in ASSERTS and \
                    heads[-1] in ASSERTS and not last_in_function:
                found.append((start + 1, 'assertions chained with && in '
                              'mid-body (errexit ignores the left side: '
                              'one assertion per line)', text))
    return sorted(found + run_findings(lines))


def loads_common(path, seen=None):
    """Whether the bats or bash file @path loads tests/lib/common.bash."""
    seen = seen or set()
    if path in seen or not os.path.exists(path):
        return False
    seen.add(path)
    if os.path.basename(path) == 'common.bash' and \
            os.path.basename(os.path.dirname(path)) == 'lib':
        return True
    with open(path) as f:
        for line in f:
            m = re.match(r'\s*load\s+(\S+)\s*$', line)
            if m:
                name = m.group(1).strip('\'"')
                p = os.path.join(os.path.dirname(path), name)
                if not p.endswith('.bash'):
                    p += '.bash'
                if loads_common(os.path.normpath(p), seen):
                    return True
    return False


TEST_FN = re.compile(r'^(static\s+)?void\s+\w+\s*\(\s*void\s*\*\*\s*\w+\s*\)\s*$')
VOID_FN = re.compile(r'^(static\s+)?(inline\s+)?void\s+\w+\s*\(')
CHECKS = re.compile(r'\b(assert_\w+|fail\w*|skip|check_expected\w*|'
                    r'expect_\w+)\s*\(')


def c_findings(path, lines):
    found = []
    # body: None outside a function, 'test' or 'helper' inside one
    body, checked, prev, early = None, False, '', []
    for no, line in enumerate(lines, 1):
        if TEST_FN.match(line):
            body, checked, prev, early = 'test', False, '', []
            continue
        if VOID_FN.match(line) and not line.rstrip().endswith(';'):
            body, checked, prev, early = 'helper', False, '', []
            continue
        if not body:
            continue
        if line.startswith('}'):
            # a helper that asserts, but not after an early return: the
            # test calling it passes having checked nothing
            if body == 'helper' and checked:
                for at, s in early:
                    found.append((at, 'silent return in a test helper '
                                  'before its assertions (return whether '
                                  'it checked, and skip() in the test '
                                  'when nothing was)', s))
            body = None
            continue
        s = line.strip()
        if re.match(r'return\s*;', s) and not checked and \
                not re.match(r'skip\s*\(\s*\)\s*;', prev):
            if body == 'test':
                found.append((no, 'silent return in a test body before '
                              'any assertion (call skip() when there is '
                              'nothing to check)', s))
            else:
                early.append((no, s))
        if CHECKS.search(s):
            checked = True
        if s and s not in ('{', '}'):
            prev = s
    return sorted(found)


def main(paths):
    bad = 0
    for path in paths:
        with open(path) as f:
            raw = f.readlines()
        if path.endswith('.c'):
            found = c_findings(path, raw)
        else:
            found = shell_findings(path, raw)
            if path.endswith('.bats') and not loads_common(path):
                found.append((1, 'does not load tests/lib/common.bash '
                              '(pipefail)', ''))
        for no, what, text in found:
            print(f'{path}:{no}: {what}: {text}')
            bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
