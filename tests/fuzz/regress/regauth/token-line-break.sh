#!/bin/sh
# fuzz target regauth: a token with a line break would split the
# Authorization header it becomes: refused (lib/oci/auth.c).
# Writes the input to $1.
printf '\002{"access_token": "a\\r\\nX-Evil: 1"}' > "$1"
