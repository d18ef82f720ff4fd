//go:build corpus

package corpus

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/internal/corednsrun"
	"github.com/lanaccess/kubectl-lanaccess/internal/syncbuf"
)

// instance is what one CoreDNS workload of a case does.
type instance struct {
	Workload string        `json:"workload" yaml:"workload"`
	Conf     string        `json:"conf" yaml:"conf"`
	Files    []mountedFile `json:"files" yaml:"files"`
	Rewrites []string      `json:"rewrites" yaml:"rewrites"`
	Starts   bool          `json:"starts" yaml:"starts"`
	Error    string        `json:"error,omitempty" yaml:"error,omitempty"`
	Ports    []portAnswers `json:"ports,omitempty" yaml:"ports,omitempty"`
	HTTP     []httpAnswer  `json:"http,omitempty" yaml:"http,omitempty"`
	// Sources: the probe host asked from the addresses expect.yaml's sources lists (acl, view).
	Sources []sourceAnswer `json:"sources,omitempty" yaml:"sources,omitempty"`
}

type portAnswers struct {
	Port    string   `json:"port" yaml:"port"`
	Answers []answer `json:"answers" yaml:"answers"`
}

// answer is CoreDNS's reply to one question.
type answer struct {
	Question  string   `json:"question" yaml:"question"`
	Transport string   `json:"transport" yaml:"transport"`
	Rcode     string   `json:"rcode" yaml:"rcode"`
	Flags     []string `json:"flags,omitempty" yaml:"flags,omitempty"`
	Answer    []string `json:"answer,omitempty" yaml:"answer,omitempty"`
	Authority []string `json:"authority,omitempty" yaml:"authority,omitempty"`
	Forwarded bool     `json:"forwarded" yaml:"forwarded"`
	Error     string   `json:"error,omitempty" yaml:"error,omitempty"`
}

// httpAnswer is what a probe of the pod spec (liveness, readiness) gets from the process.
type httpAnswer struct {
	Probe  string `json:"probe" yaml:"probe"`
	Result string `json:"result" yaml:"result"`
}

// Bounds: a case never waits longer than these.
const (
	startTimeout = 12 * time.Second // the kubernetes plugin waits up to 5 s for its first sync
	queryTimeout = 3 * time.Second
)

func runWorkload(t *testing.T, bin string, c *corpusCase, w workload) instance {
	t.Helper()
	inst := instance{Workload: fmt.Sprintf("%s %s/%s container %s", w.kind, w.namespace, w.name, w.container.Name), Conf: w.conf}
	root := t.TempDir()
	files, mounts, err := c.layout(w, root)
	if err != nil {
		inst.Error = err.Error()
		return inst
	}
	inst.Files = files
	stub, err := corednsrun.StartStub(c.expect.Setup.Zone)
	if err != nil {
		t.Fatal(err)
	}
	defer stub.Close()
	api, err := startFakeAPI(c)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	rw := corednsrun.NewRewriter(root, mounts, stub.Addr(), corednsrun.RewriteOptions{
		API: api.URL, APINote: "the fake API server holding the case's Services and EndpointSlices", OneStub: true})
	if err := rw.File(w.conf); err != nil {
		inst.Error = "cannot read the -conf file: " + err.Error()
		return inst
	}
	inst.Rewrites = stableNotes(rw, stub.Addr(), api.URL)

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-conf", filepath.Join(root, w.conf))
	cmd.Dir = root
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
	}()

	ports := sortedPorts(rw.DNSPorts())
	if err := corednsrun.WaitStarted(exited, rw.DNSPorts(), ports); err != nil {
		inst.Error = corednsrun.Normalise(out.String()+err.Error(), root, rw.DNSPorts(), rw.HTTPPorts())
		return inst
	}
	inst.Starts = true
	for _, p := range ports {
		addr := fmt.Sprintf("127.0.0.1:%d", rw.DNSPorts()[p])
		inst.Ports = append(inst.Ports, portAnswers{Port: p, Answers: ask(addr, c.expect.Setup, stub)})
	}
	inst.HTTP = probeHTTP(w, rw)
	if len(c.expect.Sources) > 0 {
		if len(ports) != 1 {
			t.Fatalf("sources need a Corefile with one server port, not %v", ports)
		}
		inst.Sources = askFromSources(t, bin, filepath.Join(root, w.conf), root, rw.DNSPorts()[ports[0]], c.expect.Sources, dns.Fqdn(c.expect.Setup.ProbeHost), c.expect.Setup.Zone, stub.Addr())
	}
	select {
	case err := <-exited:
		inst.Starts = false
		inst.Error = corednsrun.Normalise(out.String()+fmt.Sprint(err), root, rw.DNSPorts(), rw.HTTPPorts())
	default:
	}
	return inst
}

func sortedPorts(m map[string]int) []string {
	var out []string
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(out[i])
		b, _ := strconv.Atoi(out[j])
		return a < b
	})
	return out
}

// questions are the names a workstation asks: the probe host, the apex, a label nobody
// created, a name outside the zone, a cluster-internal name.
func questions(s setupSpec) []string {
	zone := dns.Fqdn(s.Zone)
	return []string{dns.Fqdn(s.ProbeHost), zone, "zz-corpus-random-label." + zone, corednsrun.OutsideName, "kubernetes.default.svc.cluster.local."}
}

func ask(addr string, s setupSpec, stub *corednsrun.Stub) []answer {
	var out []answer
	for _, name := range questions(s) {
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
			out = append(out, exchange(addr, "udp", name, qt, stub, true))
		}
	}
	// The probe host again over TCP (what a client does after a truncated answer). It may now
	// come from the cache, so its TTLs are not recorded.
	out = append(out, exchange(addr, "tcp", dns.Fqdn(s.ProbeHost), dns.TypeA, stub, false))
	return out
}

func exchange(addr, netw, name string, qt uint16, stub *corednsrun.Stub, withTTL bool) answer {
	a := answer{Question: name + " " + dns.TypeToString[qt], Transport: netw}
	before := stub.Count(name, qt)
	m := new(dns.Msg)
	m.SetQuestion(name, qt)
	m.RecursionDesired = true
	cl := &dns.Client{Net: netw, Timeout: queryTimeout}
	r, _, err := cl.Exchange(m, addr)
	a.Forwarded = stub.Count(name, qt) > before
	if err != nil {
		a.Rcode = "no answer"
		a.Error = errorClass(err)
		return a
	}
	a.Rcode = dns.RcodeToString[r.Rcode]
	for flag, on := range map[string]bool{"aa": r.Authoritative, "tc": r.Truncated, "ra": r.RecursionAvailable} {
		if on {
			a.Flags = append(a.Flags, flag)
		}
	}
	sort.Strings(a.Flags)
	a.Answer = corednsrun.Records(r.Answer, withTTL)
	a.Authority = corednsrun.Records(r.Ns, withTTL)
	return a
}

func errorClass(err error) string {
	var ne net.Error
	if ok := asNetError(err, &ne); ok && ne.Timeout() {
		return "timeout after " + queryTimeout.String()
	}
	return err.Error()
}

func asNetError(err error, target *net.Error) bool {
	ne, ok := err.(net.Error)
	if ok {
		*target = ne
	}
	return ok
}

// probeHTTP asks what the pod's httpGet probes would get from this process.
func probeHTTP(w workload, rw *corednsrun.Rewriter) []httpAnswer {
	var out []httpAnswer
	c := w.container
	type hp struct{ kind, path, port string }
	var probes []hp
	if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil {
		probes = append(probes, hp{"liveness", c.LivenessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Port.String()})
	}
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil {
		probes = append(probes, hp{"readiness", c.ReadinessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Port.String()})
	}
	for _, p := range probes {
		name := fmt.Sprintf("%s GET :%s%s", p.kind, p.port, p.path)
		lp, ok := rw.HTTPPorts()[containerPortNumber(c, p.port)]
		if !ok {
			out = append(out, httpAnswer{Probe: name, Result: "connection refused: no plugin of the Corefile listens on :" + p.port})
			continue
		}
		out = append(out, httpAnswer{Probe: name, Result: httpGet(fmt.Sprintf("http://127.0.0.1:%d%s", lp, p.path))})
	}
	return out
}

// containerPortNumber is the number a probe's port names: the kubelet resolves a named port
// to the container port of that name (kubernetes/kubernetes pkg/kubelet/prober/prober.go
// runProbe, util.ResolveContainerPort). An unknown name stays as written.
func containerPortNumber(c corev1.Container, port string) string {
	for _, cp := range c.Ports {
		if cp.Name != "" && cp.Name == port {
			return strconv.Itoa(int(cp.ContainerPort))
		}
	}
	return port
}

func httpGet(url string) string {
	cl := &http.Client{Timeout: 2 * time.Second}
	// The ready plugin answers 503 until every plugin is ready (the kubernetes plugin's first
	// sync): give it the time a readiness probe would, a few periods, bounded.
	var last string
	for range 30 {
		resp, err := cl.Get(url)
		if err != nil {
			last = err.Error()
		} else {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
			_ = resp.Body.Close()
			last = resp.Status
			if resp.StatusCode == http.StatusOK {
				return last
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	return last
}

// stableNotes turns the rewrites into text that does not depend on the run's ports.
func stableNotes(rw *corednsrun.Rewriter, stub, api string) []string {
	var out []string
	for _, n := range rw.Notes() {
		n = strings.ReplaceAll(n, stub, "STUB")
		n = strings.ReplaceAll(n, api, "FAKE-API")
		n = portPattern.ReplaceAllString(n, "127.0.0.1:PORT")
		out = append(out, n)
	}
	for _, p := range sortedPorts(rw.DNSPorts()) {
		out = append(out, fmt.Sprintf("server port %s -> a free loopback port", p))
	}
	out = append(out, "absolute paths under the pod's mounts and /etc/resolv.conf -> the same paths under a temporary root")
	return out
}

var portPattern = regexp.MustCompile(`127\.0\.0\.1:\d+`)
