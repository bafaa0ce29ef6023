// The two functions of sigsum.org/sigsum-go that torchwood's witnessctl imports, for
// building witnessctl where the Go module proxy refuses sigsum-go's source (see
// scripts/stack.sh, ensure_litewitness). The tests use its add-log and pull-logs only.
module sigsum.org/sigsum-go

go 1.24
