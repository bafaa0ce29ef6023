package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/store/storetest"
)

func TestMain(m *testing.M) {
	// Every service the tests start, in this process or as a child, signs its ledger's
	// checkpoints with one key made here and written nowhere: the default key file
	// (.data/ledger-signing-key) would otherwise be made in the package's directory.
	if os.Getenv("LEDGER_SIGNING_KEY") == "" {
		key, err := ledgerlog.GenerateKey("accountable.localhost")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Setenv("LEDGER_SIGNING_KEY", key)
	}
	// The binary the end-to-end tests run (buildBinary) is built into a directory of this
	// run's, removed at its end: 126 MB left in the temporary directory by every run
	// filled a CI machine's disk.
	dir, err := os.MkdirTemp("", "accountable-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binaryDir = dir
	storetest.Main(m, func() { os.RemoveAll(dir) })
}
