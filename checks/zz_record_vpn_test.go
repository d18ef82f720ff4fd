//go:build record

package checks

import (
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

type recording struct {
	Cmd    []string `json:"cmd"`
	Stdout string   `json:"stdout"`
	Stderr string   `json:"stderr"`
	Exit   int      `json:"exit"`
}

func record(t *testing.T, name string, cmd []string) {
	args := append([]string{"netns", "exec", os.Getenv("REC_NS")}, cmd...)
	c := exec.Command("ip", args...)
	var so, se []byte
	out, err := c.Output()
	so = out
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		se = ee.Stderr
	} else if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(recording{Cmd: cmd, Stdout: string(so), Stderr: string(se), Exit: code}, "", "  ")
	if err := os.WriteFile(filepath.Join("testdata", "vpn", name+".json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRecordVPN(t *testing.T) {
	tb := toolbox{}
	for _, tool := range vpnTools {
		if _, err := exec.LookPath(tool); err == nil {
			tb[tool] = true
		}
	}
	lim := 2 * time.Second
	set := os.Getenv("REC_SET")
	switch set {
	case "base":
		record(t, "tools", toolsCommand())
		record(t, "ip-forward-cat-0", []string{"cat", "/proc/sys/net/ipv4/ip_forward"})
		record(t, "ip-forward-sysctl-0", []string{"sysctl", "-n", "net.ipv4.ip_forward"})
		record(t, "tunnel-p2p", tunnelCommand())
		record(t, "nat-empty", []string{"sh", "-c", natScript})
		record(t, "ping-peer-answers", pingProbe(netip.MustParseAddr("10.8.0.2"), lim).cmd)
		record(t, "ping-silent", pingProbe(netip.MustParseAddr("10.244.1.99"), lim).cmd)
		for _, p := range dnsProbes(tb, netip.MustParseAddr("10.244.1.7"), "kubernetes.default.svc.cluster.local", lim) {
			record(t, "dns-pod-answers-"+p.tool, p.cmd)
		}
		for _, p := range dnsProbes(tb, netip.MustParseAddr("10.96.0.10"), "kubernetes.default.svc.cluster.local", lim) {
			record(t, "dns-vip-answers-"+p.tool, p.cmd)
		}
		for _, p := range dnsProbes(tb, netip.MustParseAddr("10.96.0.99"), "kubernetes.default.svc.cluster.local", lim) {
			record(t, "dns-vip-silent-"+p.tool, p.cmd)
		}
		for _, p := range dnsProbes(tb, netip.MustParseAddr("10.244.1.7"), "nope.default.svc.cluster.local", lim) {
			record(t, "dns-nxdomain-"+p.tool, p.cmd)
		}
		for _, p := range resolveProbes(tb, "kubernetes.default.svc.cluster.local.", lim) {
			record(t, "names-resolve-"+p.tool, p.cmd)
		}
		for _, p := range tcpProbes(tb, netip.MustParseAddr("10.244.1.7"), 53, lim) {
			record(t, "tcp-open-"+p.tool, p.cmd)
		}
		for _, p := range tcpProbes(tb, netip.MustParseAddr("10.8.0.2"), 1194, lim) {
			record(t, "tcp-refused-"+p.tool, p.cmd)
		}
		for _, p := range tcpProbes(tb, netip.MustParseAddr("10.244.1.99"), 80, lim) {
			record(t, "tcp-silent-"+p.tool, p.cmd)
		}
	case "masq":
		record(t, "nat-masq", []string{"sh", "-c", natScript})
		record(t, "ip-forward-cat-1", []string{"cat", "/proc/sys/net/ipv4/ip_forward"})
	case "brokendns":
		for _, p := range resolveProbes(tb, "kubernetes.default.svc.cluster.local.", lim) {
			record(t, "names-fail-"+p.tool, p.cmd)
		}
	}
}

func TestRecordVPNServerMode(t *testing.T) {
	if os.Getenv("REC_SET") != "server" {
		t.Skip()
	}
	record(t, "tunnel-server", tunnelCommand())
}

func TestRecordVPNNobody(t *testing.T) {
	if os.Getenv("REC_SET") != "nobody" {
		t.Skip()
	}
	record(t, "nat-denied", []string{"su", "nobody", "-s", "/bin/sh", "-c", natScript})
}
