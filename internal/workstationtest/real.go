// Package workstationtest gives tests the outputs of resolvectl, nmcli and resolved's files
// recorded on a real workstation (Debian 12's systemd-resolved and NetworkManager, run by
// lab/internal/workstation's lab test with WORKSTATION_RECORD=1) in
// pkg/workstation/testdata/real. Each file starts with "## " lines naming the versions, the
// scenario and the command; Output returns what the command printed, byte for byte.
package workstationtest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir is pkg/workstation/testdata/real, found from this file's place in the module.
func Dir(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("workstationtest: cannot locate its own source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "pkg", "workstation", "testdata", "real")
}

// Output is the recorded output name (without ".txt"), its header removed.
func Output(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(tb), name+".txt"))
	if err != nil {
		tb.Fatalf("workstationtest: %v", err)
	}
	for bytes.HasPrefix(data, []byte("## ")) {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil
		}
		data = data[i+1:]
	}
	return data
}
