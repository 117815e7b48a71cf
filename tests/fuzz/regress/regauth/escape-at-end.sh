#!/bin/sh
# fuzz target regauth: a quoted WWW-Authenticate value ending in a lone
# backslash must be refused without reading past the header's end (the
# escape skips a character: the one after it is the terminating NUL).
# Writes the input to $1.
printf '\001Bearer realm="https://a/\\' > "$1"
