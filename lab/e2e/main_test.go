//go:build lab

// Package e2e holds the tests that run against the live lab (root needed):
//
//	go test -tags lab ./lab/e2e/ -run . -v
//
// TestMain brings the lab up once (or reuses a healthy one); add tests for new checks here.
package e2e

import (
	"os"
	"testing"

	"github.com/lanaccess/kubectl-lanaccess/lab/labkit"
)

var lab *labkit.Lab

func TestMain(m *testing.M) { os.Exit(labkit.Main(m, &lab)) }
