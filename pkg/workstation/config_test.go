package workstation

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func seedTarget(t *testing.T) Target {
	t.Helper()
	tg, err := NewTarget("apps.example.com", []string{"10.0.10.11", "10.0.10.12", "10.0.10.13"}, nil)
	require.NoError(t, err)
	return tg
}

// shellArgs runs command under sh with sudo, nmcli and resolvectl replaced by a function that
// prints its arguments one per line, so the test sees exactly the argv that sh would pass.
func shellArgs(t *testing.T, command string) [][]string {
	t.Helper()
	script := `show() { printf '%s\0' "$@"; printf '\n'; }
sudo() { "$@"; }
nmcli() { show nmcli "$@"; }
resolvectl() { show resolvectl "$@"; }
` + command
	out, err := exec.Command("sh", "-c", script).Output()
	require.NoError(t, err, "sh could not run %q", command)
	lines := strings.TrimSuffix(string(out), "\n")
	calls := make([][]string, 0, strings.Count(lines, "\n")+1)
	for line := range strings.SplitSeq(lines, "\n") {
		calls = append(calls, strings.Split(strings.TrimSuffix(line, "\x00"), "\x00"))
	}
	return calls
}

func commands(steps []Step) []string {
	out := make([]string, 0, len(steps))
	for _, s := range steps {
		out = append(out, s.Command)
	}
	return out
}

func TestGenerateLinux(t *testing.T) {
	t.Run("the servers and the routing domain go to the named profile, and come out again", func(t *testing.T) {
		ins, err := Generate(Linux, seedTarget(t), ConfigOptions{Connection: "Wired connection 1", Device: "enp3s0"})
		require.NoError(t, err)
		require.Len(t, ins.Apply, 2, "with --connection there is nothing to look up")

		calls := shellArgs(t, ins.Apply[0].Command)
		assert.Equal(t, [][]string{{"nmcli", "connection", "modify", "Wired connection 1",
			"+ipv4.dns", "10.0.10.11,10.0.10.12,10.0.10.13", "+ipv4.dns-search", "~apps.example.com"}}, calls)
		assert.Equal(t, [][]string{{"nmcli", "connection", "up", "Wired connection 1"}}, shellArgs(t, ins.Apply[1].Command))

		removal := shellArgs(t, ins.Remove[0].Command)
		assert.Equal(t, [][]string{{"nmcli", "connection", "modify", "Wired connection 1",
			"-ipv4.dns", "10.0.10.11,10.0.10.12,10.0.10.13", "-ipv4.dns-search", "~apps.example.com"}}, removal)

		transient := shellArgs(t, ins.Transient[0].Command)
		assert.Equal(t, [][]string{
			{"resolvectl", "domain", "enp3s0", "~apps.example.com"},
			{"resolvectl", "dns", "enp3s0", "10.0.10.11", "10.0.10.12", "10.0.10.13"},
		}, transient, "the routing domain is set before the servers")
	})

	t.Run("without --connection the first step lists the active profiles", func(t *testing.T) {
		ins, err := Generate(Linux, seedTarget(t), ConfigOptions{})
		require.NoError(t, err)
		require.Len(t, ins.Apply, 3)
		assert.Equal(t, "nmcli -t -f NAME,DEVICE,TYPE connection show --active", ins.Apply[0].Command)
		assert.Contains(t, ins.Apply[1].Command, `'LAN profile'`)
	})

	t.Run("IPv6 servers go to ipv6.dns", func(t *testing.T) {
		tg, err := NewTarget("apps.example.com", []string{"10.0.10.11", "fd00::11"}, nil)
		require.NoError(t, err)
		ins, err := Generate(Linux, tg, ConfigOptions{Connection: "lan"})
		require.NoError(t, err)
		assert.Equal(t, [][]string{{"nmcli", "connection", "modify", "lan",
			"+ipv4.dns", "10.0.10.11", "+ipv6.dns", "fd00::11", "+ipv4.dns-search", "~apps.example.com"}}, shellArgs(t, ins.Apply[0].Command))
	})

	t.Run("the caveats say per profile, one server per link and how to reset", func(t *testing.T) {
		ins, err := Generate(Linux, seedTarget(t), ConfigOptions{Connection: "lan"})
		require.NoError(t, err)
		all := strings.Join(ins.Caveats, "\n")
		assert.Contains(t, all, "connection profile")
		assert.Contains(t, all, "one server of a link at a time")
		assert.Contains(t, all, `resolvectl flush-caches && sudo nmcli connection up lan`)
	})
}

func TestGenerateWindows(t *testing.T) {
	ins, err := Generate(Windows, seedTarget(t), ConfigOptions{ProbeName: "grafana.apps.example.com"})
	require.NoError(t, err)
	assert.Equal(t, "PowerShell as Administrator", ins.Shell)
	assert.Equal(t, "Add-DnsClientNrptRule -Namespace '.apps.example.com','apps.example.com' -NameServers '10.0.10.11','10.0.10.12','10.0.10.13' -Comment 'kubectl-lanaccess'", ins.Apply[0].Command,
		"the leading-dot namespace covers the names below the zone, the plain one the zone itself")
	assert.Equal(t, "Get-DnsClientNrptRule | Where-Object { $_.Namespace -contains '.apps.example.com' -or $_.Namespace -contains 'apps.example.com' } | Remove-DnsClientNrptRule -Force", ins.Remove[0].Command)
	assert.Contains(t, commands(ins.Verify), "Resolve-DnsName 'grafana.apps.example.com' -Type A")
	assert.Contains(t, strings.Join(ins.Caveats, "\n"), "global")
	assert.Contains(t, strings.Join(ins.Caveats, "\n"), "stop resolving")
}

func TestGenerateMacOS(t *testing.T) {
	ins, err := Generate(MacOS, seedTarget(t), ConfigOptions{})
	require.NoError(t, err)
	write := ins.Apply[1].Command
	printf, _, ok := strings.Cut(write, " | sudo tee /etc/resolver/apps.example.com >/dev/null")
	require.True(t, ok, "the file is written with sudo tee: %s", write)
	out, err := exec.Command("sh", "-c", printf).Output()
	require.NoError(t, err)
	assert.Equal(t, "nameserver 10.0.10.11\nnameserver 10.0.10.12\nnameserver 10.0.10.13\n", string(out))
	assert.Equal(t, seedTarget(t).Servers, ParseResolvConf(out), "the file reads back as the servers")
	assert.Equal(t, "sudo rm -f /etc/resolver/apps.example.com", ins.Remove[0].Command)
	assert.Contains(t, strings.Join(ins.Caveats, "\n"), "dig, nslookup")
}

// Profile names are the user's: quotes, dollars, spaces and shell syntax must reach nmcli as one
// argument, unchanged (a real sh runs the generated commands with nmcli stubbed).
func TestGenerateCarriesAnyConnectionNameAsOneArgument(t *testing.T) {
	for _, name := range []string{`Wired "office"`, "lan$(reboot)", "Bob's phone", "a b\tc", "x;id>y&", "`id`", "~home", "-n", "*"} {
		ins, err := Generate(Linux, seedTarget(t), ConfigOptions{Connection: name, Device: "enp3s0"})
		require.NoError(t, err, "%q", name)
		for _, steps := range [][]Step{ins.Apply, ins.Remove, ins.TransientRemove} {
			for _, st := range steps {
				for _, call := range shellArgs(t, st.Command) {
					if call[0] == "nmcli" {
						assert.Equal(t, name, call[3], "%q in %s", name, st.Command)
					}
				}
			}
		}
		dev := ins.Transient[0].Command
		require.NotEmpty(t, dev)
		w, err := Generate(Windows, seedTarget(t), ConfigOptions{Connection: name, ProbeName: "grafana.apps.example.com"})
		require.NoError(t, err)
		assert.NotEmpty(t, w.Apply)
	}
}

// An interface name may hold shell syntax too (the kernel refuses only '/', ':', white space):
// it reaches resolvectl as one argument.
func TestGenerateCarriesAnyInterfaceNameAsOneArgument(t *testing.T) {
	for _, dev := range []string{"eth0`x`", "en$(id)", "wl;p"} {
		ins, err := Generate(Linux, seedTarget(t), ConfigOptions{Connection: "lan", Device: dev})
		require.NoError(t, err)
		for _, call := range shellArgs(t, ins.Transient[0].Command) {
			assert.Equal(t, dev, call[2], "%q", dev)
		}
	}
}

func TestGenerateRefusesValuesOfTheWrongKind(t *testing.T) {
	for _, opt := range []ConfigOptions{
		{Device: "a/b"},
		{Device: "averyveryverylongname"},
		{ProbeName: "a'b.apps.example.com"},
		{ProbeName: "a b.apps.example.com"},
		{Connection: "nul\x00"},
	} {
		_, err := Generate(Linux, seedTarget(t), opt)
		require.Error(t, err, "%+v", opt)
	}
}
