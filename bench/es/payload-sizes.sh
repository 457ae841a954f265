# Sourced by the scripts that build payloads for the GPU machine (bench/es/make-es-payload.sh,
# src/yamlRestTest/on-gpu/make-payload.sh): each command there carries at most 64 MiB, the work tree (tracked and
# untracked, not ignored files) included.
#   check_payload_sizes ROOT DIR...   prints each DIR's size with the work tree; returns 3 when one is over 64 MiB
check_payload_sizes() {
  local root=$1 limit=$((64 * 1024 * 1024)) tree b d ok=0
  shift
  tree=$(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  echo "  work tree: $tree bytes (travels with each command)"
  for d in "$@"; do
    b=$(( $(du -sb "$root/$d" | cut -f1) + tree ))
    awk -v d="$d" -v b="$b" 'BEGIN { printf "  %s: %d bytes (%.1f MiB with the work tree, of the 64 MiB a command)\n", d, b, b / 1048576 }'
    [ "$b" -le "$limit" ] || { echo "  $d is over 64 MiB" >&2; ok=3; }
  done
  return $ok
}
