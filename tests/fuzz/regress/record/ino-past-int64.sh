#!/bin/sh
# fuzz target record: an inode number past 2^63 - 1 was read, then
# written back negative ("ino=-..."), a record no read accepts again.
# Fixed by writing unsigned fields unsigned and refusing a number past
# what its field holds (lib/registry/record.c).
# Writes the input to $1.
printf 'name=o\ntype=er\npath=2\nino=10954638576700000005' > "$1"
