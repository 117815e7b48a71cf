# Names that a hostile image may hold: a newline that forges a line, escape
# sequences that set the terminal's title or clear it, a backslash, a tab,
# a byte that is not UTF-8; and one well-formed UTF-8 name.  Load after
# common:  load ../lib/names
#
# hostile_tree DIR: create them (files, one symlink) in DIR.
hostile_tree() {
	mkdir -p "$1"
	python3 - "$1" <<'PY'
import os, sys
d = os.fsencode(sys.argv[1]) + b"/"
for n in (b"evil\nxiptool: forged line\x1b]0;pwned\x07", b"back\\slash",
          b"tab\there", b"bad\xff", "caf\u00e9".encode()):
    with open(d + n, "wb") as f:
        f.write(b"x\n")
os.symlink(b"target\x1b[31mred", d + b"lnk\x1b[2J")
PY
}

# What `xiptool ls` prints for the root of an image of hostile_tree.
HOSTILE_LS='back\\slash
bad\xff
café
evil\nxiptool: forged line\x1b]0;pwned\a
lnk\x1b[2J
lost+found
tab\there'

# The raw names, as the shell passes them.
EVIL=$'evil\nxiptool: forged line\e]0;pwned\a'
EVIL_ESC='evil\nxiptool: forged line\x1b]0;pwned\a'
LNK=$'lnk\e[2J'
