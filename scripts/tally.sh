# Sourced by the editor test runners (editors/nvim/tests/run.sh, tests/editors/): how one test
# file or suite ended, from its output.
#
# tally FILE PATTERN RC WHO NAME: sets `p` and `f` from the last line of FILE matching
# PATTERN ("…: N passed, N failed"). No such line is a failure, and so is an exit status RC
# that disagrees with it (a crash, a timeout); WHO says so, naming NAME.
tally() {
  local file="$1" pattern="$2" rc="$3" who="$4" name="$5" summary
  summary="$(grep -E "$pattern" "$file" | tail -1)"
  if [ -n "$summary" ]; then
    p="$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed$/\1/' <<<"$summary")"
    f="$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed$/\2/' <<<"$summary")"
  else
    echo "$who: $name printed no summary (exit status $rc)"
    p=0
    f=1
  fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "$who: $name exited with status $rc"
    f=1
  fi
}
