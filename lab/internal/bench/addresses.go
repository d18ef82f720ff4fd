package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/faults"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// Extra nodes for the many-addresses scenario: Node objects kept Ready by one more kwok
// process, whose InternalIPs are secondary addresses of the seed nodes' LAN interfaces. A
// packet to one of them reaches a real node namespace, where the lab's kube-proxy DNATs it to
// the Services' pods, exactly as for the three seed addresses.
const (
	benchNodeLabel = "lab.lanaccess.io/bench"
	benchNodeValue = "node"
	benchKwok      = "kwok-bench"
	firstExtraHost = 101 // 10.0.10.101 and up
)

func extraNodeName(i int) string { return fmt.Sprintf("bench-node-%02d", i+1) }

// ManyAddresses grows the setup to total addresses (nodes, both Services' externalIPs and the
// zone's answers), measures doctor and the script, and takes it all back.
func (b *Bench) ManyAddresses(ctx context.Context, total int) (TimedPair, error) {
	mark := len(b.undo)
	defer func() { _ = b.undoSince(mark) }()
	seed := b.seedAddrs()
	extra := total - len(seed)
	if extra <= 0 {
		return TimedPair{}, fmt.Errorf("%d addresses: the lab already has %d", total, len(seed))
	}
	prefix := netip.MustParseAddr(seed[0]).As4()
	var addrs []string
	for i := range extra {
		addrs = append(addrs, fmt.Sprintf("%d.%d.%d.%d", prefix[0], prefix[1], prefix[2], firstExtraHost+i))
	}
	b.Logf("%d addresses: %d extra nodes (kwok) on secondary addresses of the seed nodes", total, extra)
	if err := b.addExtraNodes(ctx, addrs); err != nil {
		return TimedPair{}, err
	}
	all := append(append([]string(nil), seed...), addrs...)
	if err := b.setAddresses(ctx, all); err != nil {
		return TimedPair{}, err
	}
	if b.Hold {
		b.Logf("holding the lab with %d addresses (%s): Ctrl-C takes it back", total, strings.Join(all, " "))
		<-ctx.Done()
		return TimedPair{}, errors.New("held, not measured")
	}
	b.Logf("%d addresses: doctor x%d, manual check x%d", total, b.Runs, b.Runs)
	p, err := b.measurePair(ctx, all, b.Runs, b.Runs, []int{0}, []int{0})
	if err == nil && len(p.DoctorFailing) > 0 {
		err = fmt.Errorf("doctor with %d addresses: %v", total, p.DoctorFailing)
	}
	if err == nil && b.WithManyAddresses != nil {
		err = b.WithManyAddresses(ctx, all)
	}
	return p, err
}

// addExtraNodes creates one Ready node per address and puts the address on a seed node.
func (b *Bench) addExtraNodes(ctx context.Context, addrs []string) error {
	nodes := b.Client.CoreV1().Nodes()
	b.Defer("extra nodes", func(ctx context.Context) error {
		err := nodes.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: benchNodeLabel + "=" + benchNodeValue})
		for i := range addrs {
			_ = b.Client.CoordinationV1().Leases("kube-node-lease").Delete(ctx, extraNodeName(i), metav1.DeleteOptions{})
		}
		return err
	})
	for i, a := range addrs {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: extraNodeName(i), Labels: map[string]string{
				benchNodeLabel: benchNodeValue, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"kubernetes.io/hostname": extraNodeName(i), "type": "kwok"}},
			// Nothing runs there: the nodes only carry addresses.
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: benchNodeLabel, Value: benchNodeValue, Effect: corev1.TaintEffectNoSchedule}}},
		}
		if _, err := nodes.Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
		// kwok keeps an InternalIP that is already there (its node-initialize stage). The node
		// controller edits new nodes too (taints): read, change, retry on conflict.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := nodes.Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: a}, {Type: corev1.NodeHostName, Address: n.Name}}
			_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("address of node %s: %w", n.Name, err)
		}
	}
	st, err := labctl.LoadState(b.Layout)
	if err != nil {
		return err
	}
	mgr := labctl.Procs(b.Layout)
	spec := procs.Spec{Name: benchKwok, Dir: b.Layout.StateDir, Argv: []string{st.Binaries.KwokBin(),
		"--config=" + labctl.KwokConfigPath(b.Layout),
		"--kubeconfig=" + b.Layout.AdminKubeconfig(),
		"--manage-nodes-with-label-selector=" + benchNodeLabel + "=" + benchNodeValue,
		"--node-lease-duration-seconds=40"}}
	if _, _, err := mgr.Start(spec); err != nil {
		return fmt.Errorf("start %s: %w", benchKwok, err)
	}
	b.Defer("kwok for the extra nodes", func(ctx context.Context) error { return mgr.Stop(ctx, benchKwok, b.Layout.StateDir) })
	seeds := b.Layout.SeedNodes()
	for i, a := range addrs {
		ns := seeds[i%len(seeds)].NS
		cidr := a + "/" + b.Layout.BridgeCIDR
		if _, err := netns.Run(ctx, ns, "ip", "addr", "replace", cidr, "dev", "eth0"); err != nil {
			return err
		}
		b.Defer("address "+a, func(ctx context.Context) error {
			_, err := netns.Run(ctx, ns, "ip", "addr", "del", cidr, "dev", "eth0")
			return err
		})
	}
	return poll(ctx, 90*time.Second, func() error {
		list, err := nodes.List(ctx, metav1.ListOptions{LabelSelector: benchNodeLabel + "=" + benchNodeValue})
		if err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			n := &list.Items[i]
			if labctl.NodeReady(n) && internalIP(n) != "" {
				ready++
			}
		}
		if ready < len(addrs) {
			return fmt.Errorf("%d of %d extra nodes Ready with an InternalIP", ready, len(addrs))
		}
		return nil
	})
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// setAddresses writes addrs into both Services' externalIPs and the zone's template answers,
// then waits until kube-proxy programmed them and the zone answers with all of them.
func (b *Bench) setAddresses(ctx context.Context, addrs []string) error {
	for _, name := range []string{"traefik", "lan-dns"} {
		svcs := b.Client.CoreV1().Services("traefik")
		svc, err := svcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		prev := svc.Spec.ExternalIPs
		if err := patchExternalIPs(ctx, b, name, addrs); err != nil {
			return err
		}
		b.Defer("externalIPs of "+name, func(ctx context.Context) error { return patchExternalIPs(ctx, b, name, prev) })
	}
	prev, err := b.Faults.EditConfigMap(ctx, "traefik", "lan-dns", "Corefile", func(c string) string { return withAnswers(c, addrs) })
	if err != nil {
		return err
	}
	b.Defer("lan-dns Corefile", func(ctx context.Context) error {
		if err := b.Faults.SetConfigMapKey(ctx, "traefik", "lan-dns", "Corefile", prev); err != nil {
			return err
		}
		return b.waitZoneAnswers(ctx, b.seedAddrs())
	})
	if err := b.Faults.WaitProxySynced(ctx); err != nil {
		return err
	}
	return b.waitZoneAnswers(ctx, addrs)
}

func patchExternalIPs(ctx context.Context, b *Bench, name string, addrs []string) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"externalIPs": addrs}})
	if err != nil {
		return err
	}
	_, err = b.Client.CoreV1().Services("traefik").Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// withAnswers replaces the zone's A answers with one line per address.
func withAnswers(corefile string, addrs []string) string {
	var out []string
	indent, done := "", false
	for line := range strings.SplitSeq(corefile, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "answer ") && strings.Contains(t, " IN A ") {
			if !done {
				indent = line[:len(line)-len(strings.TrimLeft(line, " \t"))]
				for _, a := range addrs {
					out = append(out, fmt.Sprintf(`%sanswer "{{ .Name }} 60 IN A %s"`, indent, a))
				}
				done = true
			}
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// waitZoneAnswers polls the zone DNS at every seed address (kube-proxy sends each to the
// lan-dns pod on that node when there is one, so every replica is asked) until each answers
// exactly addrs. Each CoreDNS replica's reload plugin checks every 30 s (plus jitter).
func (b *Bench) waitZoneAnswers(ctx context.Context, addrs []string) error {
	want := map[string]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	c := &dns.Client{Timeout: 2 * time.Second}
	return poll(ctx, 150*time.Second, func() error {
		for _, server := range b.seedAddrs() {
			m := new(dns.Msg)
			m.SetQuestion(dns.Fqdn(ZoneHost), dns.TypeA)
			m.SetEdns0(4096, false) // 30 answers do not fit in 512 bytes
			r, _, err := c.ExchangeContext(ctx, m, server+":53")
			if err != nil {
				return err
			}
			got := map[string]bool{}
			for _, rr := range r.Answer {
				if a, ok := rr.(*dns.A); ok {
					got[a.A.String()] = true
				}
			}
			if len(got) != len(want) {
				return fmt.Errorf("the zone answers %d addresses at %s, want %d (CoreDNS reloads its Corefile within 45 s)", len(got), server, len(want))
			}
			for a := range want {
				if !got[a] {
					return fmt.Errorf("the zone does not answer %s at %s yet", a, server)
				}
			}
		}
		return nil
	})
}

// poll is the lab's wait: check until it succeeds, ctx ends or timeout passes.
func poll(ctx context.Context, timeout time.Duration, check func() error) error {
	if err := faults.Poll(ctx, timeout, check); err != nil {
		return fmt.Errorf("after %s: %w", timeout, err)
	}
	return nil
}
