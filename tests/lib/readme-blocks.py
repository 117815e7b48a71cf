#!/usr/bin/python3
"""The shell examples of a README as one bash script, in their order.

    readme-blocks.py README.md

A shell example is a fenced block whose info string is `sh` or
`console`:
  - `sh`: the whole block is run;
  - `console`: the lines that start with a prompt (`# ` or `$ `) are run,
    without it (a line ending in a backslash goes on with the next); the
    other lines are the output shown, not run; a command that ends in
    `; echo $?` shows its exit status, so may fail;
  - any other fence (none, `text`, ...) is output or another language,
    never run.
An HTML comment `<!-- readme-test: skip REASON -->` on the last non-blank
line before a block leaves that block out; the script then says so with
the REASON (`skip README.md:LINE: REASON` on stdout).  A marker that is
not followed by a shell example, or has no reason, is an error (exit 2),
as is a fence that is never closed.

The script stops at the first command that fails (errexit, pipefail, an
ERR trap) with `README.md:LINE: failed (status N): COMMAND` on stderr,
LINE being the README's line of that command.
The blocks run one after the other in one shell, as a reader pastes them
into one terminal: a directory changed to and the variables set carry
over from block to block.
"""

import re
import shlex
import sys

FENCE = re.compile(r'^(```+|~~~+)\s*([A-Za-z0-9_+-]*)')
MARKER = re.compile(r'^<!--\s*readme-test:\s*(\S+)\s*(.*?)\s*-->\s*$')
PROMPT = re.compile(r'^[#$] ')
SHELL = ('sh', 'console')
STATUS = re.compile(r';\s*echo \$\?$')


def blocks(lines, name):
    """Yields (line number, info, body lines with their numbers, skip)."""
    i, n, marker = 0, len(lines), None
    while i < n:
        line = lines[i].rstrip('\n')
        m = MARKER.match(line)
        if m:
            if m.group(1) != 'skip' or not m.group(2):
                raise SystemExit(f'{name}:{i + 1}: a marker is'
                                 ' <!-- readme-test: skip REASON -->')
            marker = (i + 1, m.group(2))
            i += 1
            continue
        f = FENCE.match(line)
        if not f:
            if line.strip() and marker:
                raise SystemExit(f'{name}:{marker[0]}: marker not followed'
                                 ' by a shell example')
            i += 1
            continue
        start, fence, info = i + 1, f.group(1), f.group(2)
        body = []
        i += 1
        while i < n and not lines[i].startswith(fence):
            body.append((i + 1, lines[i].rstrip('\n')))
            i += 1
        if i == n:
            raise SystemExit(f'{name}:{start}: fence never closed')
        i += 1
        if marker and info not in SHELL:
            raise SystemExit(f'{name}:{marker[0]}: marker not followed by'
                             ' a shell example')
        if info in SHELL:
            yield start, info, body, marker[1] if marker else None
        marker = None


def console_commands(body):
    """The (line, command) pairs of a console block."""
    out, cur = [], None
    for num, text in body:
        if cur is not None:
            cur = (cur[0], cur[1] + '\n' + text)
        elif PROMPT.match(text):
            cur = (num, text[2:])
        else:
            continue
        if not cur[1].endswith('\\'):
            out.append(cur)
            cur = None
    if cur is not None:
        out.append(cur)
    return out


def main():
    name = sys.argv[1]
    with open(name, encoding='utf-8') as f:
        lines = f.readlines()
    short = name.rsplit('/', 1)[-1]
    out = []		# (script line, README line or 0)

    def emit(text, num=0):
        for k, part in enumerate(text.split('\n')):
            out.append((part, num + k if num else 0))

    emit('set -eE -o pipefail')
    emit('trap \'readme_st=$?; echo "%s:${readme_map[$LINENO]:-?}: failed'
         ' (status $readme_st): $BASH_COMMAND" >&2; exit 1\' ERR' % short)
    for start, info, body, skip in blocks(lines, name):
        if skip:
            emit('echo %s' % shlex.quote(f'skip {short}:{start}: {skip}'))
            continue
        emit(f'echo "run {short}:{start}"')
        if info == 'sh':
            cmds = [(body[0][0], '\n'.join(t for _, t in body))] if body \
                else []
        else:
            cmds = console_commands(body)
        for num, cmd in cmds:
            if info == 'console' and STATUS.search(cmd):
                # it shows its status: failing is its example
                emit('set +eE; readme_err=$(trap -p ERR); trap - ERR')
                emit(cmd, num)
                emit('set -eE; eval "$readme_err"')
            else:
                emit(cmd, num)
    emit('echo done')
    # line 1 of the script: which README line each script line comes from
    print('readme_map=(0 0 %s)' % ' '.join(str(n) for _, n in out))
    print('\n'.join(t for t, _ in out))


if __name__ == '__main__':
    main()
