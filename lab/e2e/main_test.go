//go:build lab

// Package e2e holds the tests that run against the live lab (root needed):
//
//	go test -tags lab ./lab/e2e/ -run . -v
//
// TestMain brings the lab up once (or reuses a healthy one); add tests for new checks here.
package e2e

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
)

var lab *labkit.Lab

// listenEnv makes the test binary a TCP listener (a process of a given uid holding a socket,
// for the kernel privilege test) instead of running tests.
const listenEnv = "LANACCESS_E2E_LISTEN"

func TestMain(m *testing.M) {
	if addr := os.Getenv(listenEnv); addr != "" {
		os.Exit(listen(addr))
	}
	os.Exit(labkit.Main(m, &lab))
}

// listen holds a TCP socket on addr for at most five minutes (the test kills it sooner).
func listen(addr string) int {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return 1
	}
	defer func() { _ = l.Close() }()
	time.Sleep(5 * time.Minute)
	return 0
}
