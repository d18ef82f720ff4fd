package daemon

import (
	"encoding/json"
	"os"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// SyncRuntime names the file where the runtime loop records what it has acted on.
const SyncRuntime = "runtime.synced"

// synced runs fn and, if it succeeded, records per resource the highest resourceVersion that
// was in the cache when fn started: a waiter that wrote an object at version V knows the loop
// acted on it once the record for that resource reaches V (versions are etcd revisions).
func synced(l layout.Layout, file string, infs map[string]cache.SharedIndexInformer, fn func() error) error {
	seen := map[string]uint64{}
	for name, inf := range infs {
		for _, obj := range inf.GetStore().List() {
			if m, ok := obj.(metav1.Object); ok {
				if v, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64); err == nil && v > seen[name] {
					seen[name] = v
				}
			}
		}
	}
	if err := fn(); err != nil {
		return err
	}
	b, err := json.Marshal(seen)
	if err != nil {
		return err
	}
	tmp := l.Path(file + ".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, l.Path(file))
}

// ReadSynced returns what a loop recorded (see synced).
func ReadSynced(l layout.Layout, file string) (map[string]uint64, error) {
	b, err := os.ReadFile(l.Path(file))
	if err != nil {
		return nil, err
	}
	var m map[string]uint64
	return m, json.Unmarshal(b, &m)
}
