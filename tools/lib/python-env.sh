# Sourced by the tools that run Python (tools/cel-oracle/run, tools/deploy-check/run):
#   python_env NAME REQUIREMENT...
# makes (once) a virtual environment at target/python/NAME from $PYTHON (default python3)
# with the pinned requirements installed, and sets PY to its interpreter. The system
# interpreter is never installed into: a stock Debian or Ubuntu refuses that
# (externally-managed-environment, PEP 668), and it is not ours to change.
python_env() {
    local name=$1
    shift
    local root
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    local dir=${OOMWARDEN_VENVS:-$root/target/python}/$name
    local base=${PYTHON:-python3}
    local want
    want="$("$base" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null) $*"
    if [[ -x $dir/bin/python && "$(cat "$dir/.made-for" 2>/dev/null)" == "$want" ]]; then
        PY=$dir/bin/python
        return 0
    fi
    command -v "$base" > /dev/null || { echo "python-env: no $base on PATH: Python 3 is needed (set PYTHON to one)" >&2; return 1; }
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    echo "python-env: making the virtual environment $dir from $(command -v "$base") for: $*" >&2
    if ! "$base" -m venv "$dir" > /dev/null 2>&1; then
        rm -rf "$dir"
        # Debian and Ubuntu ship the venv module apart.
        if command -v apt-get > /dev/null && [[ $(id -u) == 0 ]]; then
            echo "python-env: installing the distribution's python3-venv" >&2
            export DEBIAN_FRONTEND=noninteractive
            apt-get install -y -qq python3-venv > /dev/null 2>&1 ||
                { apt-get update -qq && apt-get install -y -qq python3-venv > /dev/null; }
            "$base" -m venv "$dir" || return 1
        else
            echo "python-env: $base cannot make a virtual environment; install its venv module (Debian, Ubuntu: apt-get install python3-venv)" >&2
            return 1
        fi
    fi
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$@" || { rm -rf "$dir"; return 1; }
    echo "$want" > "$dir/.made-for"
    PY=$dir/bin/python
}
