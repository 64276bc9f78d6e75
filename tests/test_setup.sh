#!/bin/sh
# SPDX-License-Identifier: MIT
# test_setup.sh SOURCE_DIR: the set-up step of `make run` and `make test`
# (tools/setup.sh), without installing anything:
#   1. with cmake hidden from PATH it finds it missing and says what it
#      installs (GAD_SETUP=print);
#   2. as a user who is not root and has no password-less sudo (nobody,
#      when this runs as root) it prints the exact apt-get command and
#      fails naming what is missing, without waiting for a password;
#   3. every package it names exists for apt (apt-cache policy gives a
#      candidate); skipped where there is no apt-cache.
set -u
src=${1:?usage: test_setup.sh SOURCE_DIR}
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# A PATH with everything of this one but cmake: a folder of links, the
# first of each name winning as in a PATH search.
mkdir "$tmp/bin"
IFS=:
for d in $PATH; do
    [ -d "$d" ] && ln -s "$d"/* "$tmp/bin/" 2>/dev/null
done
unset IFS
rm -f "$tmp/bin/cmake"
cc=$(command -v "${CC:-cc}") || fail "no C compiler"
PATH="$tmp/bin" command -v cmake >/dev/null && fail "cmake is still on the PATH"

# 1. detection
out=$(PATH="$tmp/bin" CC="$cc" GAD_SETUP=print sh "$src/tools/setup.sh" 2>&1) ||
    fail "setup.sh (print) failed: $out"
echo "$out"
echo "$out" | grep -q "missing, needed to build: cmake" || fail "cmake was not found missing"
echo "$out" | grep -q "would install: apt-get install -y --no-install-recommends cmake" ||
    fail "it does not say it installs cmake"

# 2. not root, no sudo: the command, an error, no prompt
user_run() { # run the set-up as a user who cannot install
    if [ "$(id -u)" = 0 ]; then
        command -v runuser >/dev/null || return 77
        runuser -u nobody -- env PATH="$tmp/bin" CC="$cc" HOME="$tmp" sh "$src/tools/setup.sh"
    else
        sudo -n true 2>/dev/null && return 77 # it could install: not here
        env PATH="$tmp/bin" CC="$cc" sh "$src/tools/setup.sh"
    fi
}
out=$(user_run </dev/null 2>&1)
rc=$?
if [ $rc -eq 77 ]; then
    echo "as a user without sudo: skipped (no runuser, or this user has password-less sudo)"
else
    echo "$out"
    [ $rc -ne 0 ] || fail "setup.sh succeeded for a user who cannot install cmake"
    echo "$out" | grep -q "sudo apt-get update && sudo apt-get install -y --no-install-recommends cmake" ||
        fail "it does not print the command to run"
    echo "$out" | grep -q "missing: cmake" || fail "the error does not name cmake"
    echo "$out" | grep -qi "password:" && fail "it asked for a password"
fi

# 3. every package exists
if ! command -v apt-cache >/dev/null; then
    echo "packages: skipped (no apt-cache here)"
else
    for p in $(sh "$src/tools/setup.sh" --packages); do
        cand=$(apt-cache policy "$p" 2>/dev/null | sed -n 's/^ *Candidate: *//p')
        [ -n "$cand" ] && [ "$cand" != "(none)" ] ||
            fail "apt-cache policy knows no '$p' (after apt-get update)"
        echo "package $p: candidate $cand"
    done
fi
echo "test_setup: ok"
