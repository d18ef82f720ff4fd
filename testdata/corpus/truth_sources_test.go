//go:build corpus

package corpus

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/lanaccess/kubectl-lanaccess/internal/corednsrun"
)

// A case whose answers depend on the source address of the query (acl, view) lists, in
// expect.yaml, the sources CoreDNS really sees: `sources: [{ip: 10.244.1.1, is: "..."}]`. The
// harness cannot send from those addresses on the machine's loopback, so it runs a second copy
// of the case's CoreDNS (the same rewritten files) in a network namespace of its own (a new user
// and network namespace: no root needed where unprivileged user namespaces are allowed), adds
// each source to that namespace's loopback, starts the stub upstream at the address the
// rewritten Corefile names, and asks the probe host's A from each. Nothing leaves the namespace;
// it disappears with the helper process.

// source is one address CoreDNS sees a query from, and why.
type source struct {
	IP string `json:"ip" yaml:"ip"`
	Is string `json:"is" yaml:"is"`
}

// sourceAnswer is CoreDNS's answer to the probe host asked from one source.
type sourceAnswer struct {
	Source   string   `json:"source" yaml:"source"`
	Question string   `json:"question" yaml:"question"`
	Rcode    string   `json:"rcode" yaml:"rcode"`
	Answer   []string `json:"answer,omitempty" yaml:"answer,omitempty"`
	// Forwarded: the namespace's own stub upstream (the same address, the same public answers)
	// received the question.
	Forwarded bool   `json:"forwarded" yaml:"forwarded"`
	Error     string `json:"error,omitempty" yaml:"error,omitempty"`
}

const netnsHelperEnv = "CORPUS_NETNS_HELPER"

// askFromSources runs the helper (this test binary, re-executed in new user and network
// namespaces) and returns what CoreDNS answered to each source.
func askFromSources(t *testing.T, bin, conf, dir string, port int, srcs []source, qname, zone, stub string) []sourceAnswer {
	t.Helper()
	req := netnsRequest{Bin: bin, Conf: conf, Dir: dir, Port: port, Name: qname, Zone: zone, Stub: stub}
	for _, s := range srcs {
		if net.ParseIP(s.IP) == nil || net.ParseIP(s.IP).To4() == nil {
			t.Fatalf("sources: %q is not an IPv4 address", s.IP)
		}
		req.Sources = append(req.Sources, s.IP)
	}
	js, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNetnsHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), netnsHelperEnv+"="+string(js))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	timer := time.AfterFunc(startTimeout+time.Duration(len(srcs)+2)*queryTimeout+10*time.Second, func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
	})
	out, err := cmd.Output()
	timer.Stop()
	if err != nil {
		t.Fatalf("the source helper in its own network namespace failed (%v): %s", err, out)
	}
	var res []sourceAnswer
	for line := range strings.SplitSeq(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "SOURCES "); ok {
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(res) != len(srcs) {
		t.Fatalf("the source helper answered %d of %d sources: %s", len(res), len(srcs), out)
	}
	for i := range res {
		res[i].Source = srcs[i].IP + " (" + srcs[i].Is + ")"
	}
	return res
}

type netnsRequest struct {
	Bin, Conf, Dir, Name string
	Zone, Stub           string // the stub upstream the rewritten Corefile forwards to
	Port                 int
	Sources              []string
}

// TestNetnsHelper is the helper's body; it runs only when re-executed by askFromSources.
func TestNetnsHelper(t *testing.T) {
	raw := os.Getenv(netnsHelperEnv)
	if raw == "" {
		t.Skip("runs only as the helper of askFromSources")
	}
	var req netnsRequest
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		t.Fatal(err)
	}
	ip := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ip("link", "set", "lo", "up")
	for _, s := range req.Sources {
		ip("addr", "add", s+"/32", "dev", "lo")
	}
	stub, err := corednsrun.StartStubAt(req.Zone, req.Stub)
	if err != nil {
		t.Fatalf("the stub upstream in the namespace: %v", err)
	}
	defer stub.Close()
	cmd := exec.Command(req.Bin, "-conf", req.Conf)
	cmd.Dir = req.Dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		if err := <-exited; err != nil {
			t.Logf("CoreDNS in the namespace ended: %v", err)
		}
	}()
	portKey := strconv.Itoa(req.Port)
	if err := corednsrun.WaitStarted(exited, map[string]int{portKey: req.Port}, []string{portKey}); err != nil {
		t.Fatalf("CoreDNS did not start in the namespace: %v", err)
	}
	res := make([]sourceAnswer, 0, len(req.Sources))
	for _, s := range req.Sources {
		a := sourceAnswer{Question: req.Name + " A"}
		m := new(dns.Msg)
		m.SetQuestion(req.Name, dns.TypeA)
		m.RecursionDesired = true
		cl := &dns.Client{Net: "udp", Timeout: queryTimeout, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(s)}, Timeout: queryTimeout}}
		before := stub.Count(req.Name, dns.TypeA)
		r, _, err := cl.Exchange(m, fmt.Sprintf("127.0.0.1:%d", req.Port))
		a.Forwarded = stub.Count(req.Name, dns.TypeA) > before
		if err != nil {
			a.Rcode, a.Error = "no answer", errorClass(err)
		} else {
			a.Rcode = dns.RcodeToString[r.Rcode]
			a.Answer = corednsrun.Records(r.Answer, false)
		}
		res = append(res, a)
	}
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("SOURCES " + string(js))
}
