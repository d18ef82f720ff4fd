package labctl

import (
	"fmt"
	"os"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

func removeResolverDir(ns string) error {
	if err := os.RemoveAll(layout.ResolvConfDir(ns)); err != nil {
		return fmt.Errorf("remove %s: %w", layout.ResolvConfDir(ns), err)
	}
	return nil
}
