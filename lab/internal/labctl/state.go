package labctl

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// State is what `up` records for the daemon, `status`, `down` and the tests.
type State struct {
	Binaries  binaries.Set `json:"binaries"`
	CreatedAt time.Time    `json:"createdAt"`
	// UpDuration is how long the last full bring-up took (cold or warm).
	UpDuration string `json:"upDuration,omitempty"`
	// Ready is set once every workload answered; a crash before leaves it false.
	Ready bool `json:"ready"`
	// ManifestsDigest is the hash of manifests/base when they were last applied.
	ManifestsDigest string `json:"manifestsDigest,omitempty"`
	// WorkstationPackages is the cache entry of the laptop's workstation (lab/build.sh
	// workstation), and WorkstationStart how long it took to start (DHCP lease included).
	WorkstationPackages string `json:"workstationPackages,omitempty"`
	WorkstationStart    string `json:"workstationStart,omitempty"`
}

// SaveState writes state.json.
func SaveState(l layout.Layout, st State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.StateDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(l.StateFile(), b, 0o600)
}

// LoadState reads state.json.
func LoadState(l layout.Layout) (State, error) {
	var st State
	b, err := os.ReadFile(l.StateFile())
	if err != nil {
		return st, fmt.Errorf("lab state %s: %w (is the lab up?)", l.StateFile(), err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("lab state %s: %w", l.StateFile(), err)
	}
	return st, nil
}
