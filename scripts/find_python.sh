#!/usr/bin/env bash
# Print the path of a Python interpreter of the wanted minor version (default 3.12).
# Looks at: $PYTHON, python3.X on PATH, pyenv's versions (PYENV_ROOT, ~/.pyenv, PYENV_VERSION).
# Exits 1 with a clear message when none is found.
set -u
want="${1:-3.12}"
works() { [ -n "$1" ] && [ -x "$1" ] && "$1" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$want' else 1)" 2>/dev/null; }
candidates=()
[ -n "${PYTHON:-}" ] && candidates+=("$PYTHON")
p=$(command -v "python$want" 2>/dev/null) && candidates+=("$p")
root="${PYENV_ROOT:-$HOME/.pyenv}"
if command -v pyenv >/dev/null 2>&1; then
  r=$(pyenv root 2>/dev/null) && root="$r"
fi
if [ -n "${PYENV_VERSION:-}" ]; then
  for v in ${PYENV_VERSION//:/ }; do candidates+=("$root/versions/$v/bin/python$want"); done
fi
for d in $(ls -d "$root"/versions/"$want"* 2>/dev/null | sort -rV); do candidates+=("$d/bin/python$want"); done
for d in /usr/local/bin /usr/bin; do candidates+=("$d/python$want"); done
for c in "${candidates[@]}"; do
  if works "$c"; then echo "$c"; exit 0; fi
done
echo "error: no Python $want found (looked at \$PYTHON, python$want on PATH, $root/versions/$want*, /usr/bin). Install it, e.g. 'pyenv install $want', or set PYTHON=/path/to/python$want." >&2
exit 1
