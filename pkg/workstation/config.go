package workstation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
)

// OS is a workstation family; each configures per-domain DNS its own way.
type OS string

const (
	Linux   OS = "linux"   // NetworkManager + systemd-resolved
	Windows OS = "windows" // Name Resolution Policy Table (NRPT)
	MacOS   OS = "macos"   // /etc/resolver/<zone>
)

// ParseOS accepts the names users type, Go's GOOS values included ("darwin").
func ParseOS(s string) (OS, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "linux":
		return Linux, nil
	case "windows", "win":
		return Windows, nil
	case "macos", "darwin", "mac", "osx":
		return MacOS, nil
	}
	return "", fmt.Errorf("unknown OS %q: use linux, windows or macos", s)
}

// Step is one command to paste, with the reason it is there.
type Step struct {
	Comment string `json:"comment"`
	Command string `json:"command"`
}

// Instructions are everything a user needs to set one workstation up and to undo it.
type Instructions struct {
	OS   OS     `json:"os"`
	Zone string `json:"zone"`
	// Servers are the resolvers the zone is sent to.
	Servers []string `json:"servers"`
	// Shell says where the commands run ("PowerShell as Administrator").
	Shell  string `json:"shell"`
	Apply  []Step `json:"apply"`
	Verify []Step `json:"verify"`
	Remove []Step `json:"remove"`
	// Transient, when set, is a way to try the setting without saving it, and TransientRemove
	// its undo.
	Transient       []Step `json:"transient,omitempty"`
	TransientRemove []Step `json:"transientRemove,omitempty"`
	// Caveats are what the user must know before relying on it: where the setting applies and
	// what happens elsewhere.
	Caveats []string `json:"caveats"`
}

// ConfigOptions tune the generated commands.
type ConfigOptions struct {
	// Connection is the NetworkManager profile of the LAN connection (Linux); empty prints a
	// placeholder and the command that lists the candidates.
	Connection string
	// Device is the network interface of that connection (Linux, transient setup only).
	Device string
	// ProbeName is a name in the zone used in the verification commands; empty = "<zone apex>".
	ProbeName string
}

// Generate returns the commands that send only t.Zone.String() to t.Servers on os, and their removal.
func Generate(os OS, t Target, opt ConfigOptions) (Instructions, error) {
	if t.Zone.IsZero() {
		return Instructions{}, errors.New("no zone to send to the LAN DNS")
	}
	if len(t.Servers) == 0 {
		return Instructions{}, fmt.Errorf("no DNS server address for zone %s", t.Zone.String())
	}
	if opt.ProbeName == "" {
		opt.ProbeName = t.Zone.String()
	}
	// Every value reaches a command as one quoted word (remedy.Quote for sh, PowerShellQuote
	// for PowerShell), so a connection name may hold anything a profile name can; the others
	// are checked for their kind.
	if strings.ContainsRune(opt.Connection, 0) {
		return Instructions{}, fmt.Errorf("--connection %q holds a NUL byte, which no profile name can", opt.Connection)
	}
	if opt.Device != "" {
		if err := valid.InterfaceName(opt.Device); err != nil {
			return Instructions{}, fmt.Errorf("--device: %w", err)
		}
	}
	if err := valid.Hostname(opt.ProbeName); err != nil {
		return Instructions{}, fmt.Errorf("--host: %w", err)
	}
	ins := Instructions{OS: os, Zone: t.Zone.String(), Servers: strings.Split(joinAddrs(t.Servers, ","), ",")}
	switch os {
	case Linux:
		linuxInstructions(&ins, t, opt)
	case Windows:
		windowsInstructions(&ins, t, opt)
	case MacOS:
		macosInstructions(&ins, t, opt)
	default:
		return Instructions{}, fmt.Errorf("unknown OS %q: use linux, windows or macos", os)
	}
	ins.Caveats = append(ins.Caveats,
		"Browsers with their own \"secure DNS\" (DNS over HTTPS) setting ask their provider directly and never see this rule; turn it off or add an exception for "+t.Zone.String()+".")
	return ins, nil
}
