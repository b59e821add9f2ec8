#!/usr/bin/env bash
# Installs what `make test` needs into a virtual environment: kireme (editable) with the dev tools, then
# every optional backend whose tests run when it is there and skip when it is not.
#
# Why a script: CI machines' disks vary, and on a shared disk the free space comes and goes (twice a run
# ran out of space installing the ~3.2 GB of extras). Where the disk has room for all of it, one pip call
# resolves everything together, as before. Where it has not, or that call fails, the core (tests, lint,
# types, docs, the index) is installed first and must succeed; then each optional backend, smallest
# first, only while the disk has room for it; a backend left out is named at the end, and its tests skip
# with the reason; that path also installs without .pyc files (--no-compile: 650 MB less, but where
# PYTHONDONTWRITEBYTECODE is set, as on this project's machines, every test process then compiles what
# it imports: the suite took longer).
#
# usage: scripts/install-dev.sh VENV_PYTHON TORCH_VERSION TORCH_INDEX
# KIREME_DEV_FREE_MB overrides the free space measured (to try the tiered path on a large disk).
set -euo pipefail
py=$1
torch_version=$2
torch_index=$3
# pinned versions: see the head of dev-constraints.txt for why
constraints="$(dirname "$0")/dev-constraints.txt"
pip=("$py" -m pip install --no-cache-dir --quiet --constraint "$constraints")

core="dev,formats,index,tokenizers,langchain,llama-index,haystack,serve,docs"
# extra:MB it adds to the venv (measured 2026-12-05, without .pyc), in the order they are tried;
# st also takes torch's CPU build (700 of its MB)
optional=(qdrant:10 milvus:70 code:190 ja:200 ray:210 chroma:260 st:1050)
core_mb=1250
pyc_mb=650     # the .pyc files of all of it, which the one-call install writes
reserve_mb=700 # what pip unpacks beside the venv and what the tests write (docs site, indexes, Ray logs)

free_mb() {
    if [[ -n ${KIREME_DEV_FREE_MB:-} ]]; then
        echo "$KIREME_DEV_FREE_MB"
    else
        df -Pm "$(dirname "$py")" | awk 'NR == 2 { print $4 }'
    fi
}

# torch's CPU build first, or sentence-transformers would pull PyPI's CUDA build (GBs). pip's own sources
# hold `X+cpu` where a local mirror has it (this project's machines); elsewhere PyTorch's CPU index.
install_torch() {
    "${pip[@]}" "torch==$torch_version+cpu" 2>/dev/null ||
        "${pip[@]}" "torch==$torch_version" --index-url "$torch_index"
}

all_mb=$((core_mb + pyc_mb + reserve_mb))
for entry in "${optional[@]}"; do all_mb=$((all_mb + ${entry#*:})); done
available=$(free_mb)

if ((available >= all_mb)); then
    extras=$core
    for entry in "${optional[@]}"; do extras+=",${entry%%:*}"; done
    if install_torch && "${pip[@]}" -e ".[$extras]"; then
        exit 0
    fi
    echo "install-dev: installing everything in one call failed; now the core, then one backend at a time" >&2
else
    echo "install-dev: ${available} MB free, ~${all_mb} MB wanted for every backend: installing them one at a time" >&2
fi

pip+=(--no-compile)
# the core must install; once more after a failure (this workplace's shared disk has run out for a moment)
"${pip[@]}" -e ".[$core]" || {
    echo "install-dev: the core did not install; trying once more" >&2
    sleep 10
    "${pip[@]}" -e ".[$core]"
}
# each step asks for every extra installed so far as well: pip's resolver weighs only what is asked for, so
# a backend installed alone may upgrade a package that an earlier one pins (chromadb took python-dateutil
# past what moto's botocore allows)
installed=$core
left_out=()
for entry in "${optional[@]}"; do
    extra=${entry%%:*}
    need=$((${entry#*:} + reserve_mb))
    available=$(free_mb)
    if ((available < need)); then
        left_out+=("$extra (${available} MB free, needs ~${need})")
        continue
    fi
    if { [[ $extra != st ]] || install_torch; } && "${pip[@]}" -e ".[$installed,$extra]"; then
        installed+=",$extra"
    else
        left_out+=("$extra (did not install beside the others)")
    fi
done
if ((${#left_out[@]})); then
    echo "install-dev: left out, their tests will skip:" >&2
    printf '  - %s\n' "${left_out[@]}" >&2
fi
