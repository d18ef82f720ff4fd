package labkit

import (
	"testing"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/workstation"
)

// WorkstationProfile is the NetworkManager profile of the laptop's LAN interface.
const WorkstationProfile = labctl.WorkstationProfile

// LaptopInterface is the laptop's LAN interface, the one NetworkManager manages.
const LaptopInterface = labctl.LaptopInterface

// LaptopWorkstation is the laptop's real workstation (Debian's NetworkManager and systemd-resolved,
// started by lab up): Run executes nmcli, resolvectl or the plugin inside it, with its private
// D-Bus and /run.
func (l *Lab) LaptopWorkstation(tb testing.TB) *workstation.Workstation {
	tb.Helper()
	w, err := labctl.AttachWorkstation(l.layout)
	must(tb, "attach to the laptop's workstation", err)
	return w
}
