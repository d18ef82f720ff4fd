package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
)

// KubeProxySelector finds kube-proxy's static pods (RKE2's component label, rancher/rke2
// pkg/staticpod; GKE's is the same).
const KubeProxySelector = "component=kube-proxy"

// dataplaneSources are the kube-proxies readDataplane found, which addKubeProxySources puts in
// Dataplane.KubeProxy once the nodes and kubeadm's kube-proxy ConfigMap are read.
type dataplaneSources struct {
	// read: the DaemonSets and static pods were read (or failed): not out of scope.
	read bool
	// daemonSets and staticPods are the kube-proxies of DaemonSets and of static pods.
	daemonSets, staticPods []ProxySource
}

// readDataplane reads what implements Services: kube-proxy's DaemonSets and static pods
// (into src), Cilium's and Calico's settings (LA202). Reads that fail are said in
// Dataplane.Unread.
func (d *discoverer) readDataplane(src *dataplaneSources) error {
	dp := &d.setup.Dataplane
	if key := ReadKey("apps", "daemonsets", ""); d.outOfScope(key, "") {
		d.outOfScope(ReadKey("", "pods", "kube-system"), "kube-system")
		dp.Unread = append(dp.Unread, "the DaemonSets and kube-system's static pods were not read (kube-proxy, Cilium and Calico agents unseen): "+d.partial[key].Error())
		return nil
	}
	src.read = true
	dss, err := listDaemonSets(d.ctx, d.client)
	dssRead := err == nil
	if err != nil {
		if err := d.optional(ReadKey("apps", "daemonsets", ""), err); err != nil {
			return err
		}
		dp.Unread = append(dp.Unread, "the DaemonSets could not be read (kube-proxy, Cilium and Calico agents unseen): "+err.Error())
	}
	if src.daemonSets, err = d.readKubeProxyDaemonSets(dss); err != nil {
		return err
	}
	pods, err := listPods(d.ctx, d.client, "kube-system", KubeProxySelector)
	if err != nil {
		if err := d.optional(ReadKey("", "pods", "kube-system"), err); err != nil {
			return err
		}
		dp.Unread = append(dp.Unread, "the static pods in kube-system could not be read: "+err.Error())
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		if metav1.GetControllerOf(&p) != nil {
			continue // a DaemonSet's pod, read through its DaemonSet
		}
		if s, ok := staticPodSource(p); ok {
			src.staticPods = append(src.staticPods, s)
		}
	}
	if err := d.readCilium(dss, dssRead); err != nil {
		return err
	}
	return d.readCalico(dss)
}

// addKubeProxySources puts the kube-proxies in Dataplane.KubeProxy: those of DaemonSets, else
// the one kubeadm's ConfigMap configures; those of static pods; those k3s runs on the nodes.
func (d *discoverer) addKubeProxySources(src dataplaneSources) {
	if !src.read {
		return
	}
	dp := &d.setup.Dataplane
	dp.KubeProxy = append(dp.KubeProxy, src.daemonSets...)
	if len(dp.KubeProxy) == 0 && d.setup.KubeProxyConfig != "" {
		dp.KubeProxy = append(dp.KubeProxy, configMapSource(d.setup.KubeProxyConfig))
	}
	dp.KubeProxy = append(dp.KubeProxy, src.staticPods...)
	for _, n := range d.setup.Nodes {
		if s, ok := k3sSource(n); ok {
			dp.KubeProxy = append(dp.KubeProxy, s)
		}
	}
}

// readKubeProxyDaemonSets returns the kube-proxies of the DaemonSets in kube-system, read with
// the ConfigMaps they mount.
func (d *discoverer) readKubeProxyDaemonSets(dss []appsv1.DaemonSet) ([]ProxySource, error) {
	var out []ProxySource
	cms := map[string]corev1.ConfigMap{}
	for _, ds := range dss {
		if ds.Namespace != "kube-system" || !runsKubeProxy(ds) {
			continue
		}
		for _, name := range configVolumes(ds) {
			if _, done := cms[name]; done {
				continue
			}
			got, err := listConfigMapNamed(d.ctx, d.client, ds.Namespace, name)
			if err != nil {
				if err := d.optional(ReadKey("", "configmaps", ds.Namespace), err); err != nil {
					return nil, err
				}
				continue
			}
			for _, cm := range got {
				cms[cm.Name] = cm
			}
		}
		out = append(out, daemonSetSource(ds, cms))
	}
	return out, nil
}

func runsKubeProxy(ds appsv1.DaemonSet) bool {
	return slices.ContainsFunc(ds.Spec.Template.Spec.Containers, IsKubeProxyContainer)
}

// configVolumes are the ConfigMaps a DaemonSet mounts.
func configVolumes(ds appsv1.DaemonSet) []string {
	var out []string
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			out = append(out, v.ConfigMap.Name)
		}
	}
	return out
}

// readCilium reads cilium-config where the cilium agent reads it: the ConfigMap of the agent
// DaemonSet's namespace (cilium/cilium install/kubernetes/cilium/templates put both in
// `{{ include "cilium.namespace" . }}`, the release namespace; kube-system is the usual one),
// kube-system when no agent is seen. Nowhere else: the doctor's grants cover
// ConfigMaps in kube-system (LA202's declared reads, checks/catalogue, which LA001 reviews); the shipped
// ClusterRole also covers the agent's namespace elsewhere, and a custom role that does not is
// said, naming the namespace and the grant. dssRead: the DaemonSets were listed.
func (d *discoverer) readCilium(dss []appsv1.DaemonSet, dssRead bool) error {
	ns := "kube-system"
	agent := false
	for _, ds := range dss {
		if ds.Name == "cilium" {
			ns, agent = ds.Namespace, true
		}
	}
	object := "ConfigMap " + ns + "/cilium-config"
	got, err := listConfigMapNamed(d.ctx, d.client, ns, "cilium-config")
	if err != nil {
		if err := d.optional(ReadKey("", "configmaps", ns), err); err != nil {
			return err
		}
		if agent {
			d.setup.Dataplane.Cilium = &CiliumConfig{Object: object, Agent: true}
		}
		if agent || !dssRead {
			d.setup.Dataplane.Unread = append(d.setup.Dataplane.Unread, ciliumUnread(ns, agent, err))
		}
		return nil
	}
	if len(got) == 0 && !agent {
		return nil
	}
	c := &CiliumConfig{Object: object, Agent: agent}
	if len(got) > 0 {
		c.Present = true
		c.KubeProxyReplacement = got[0].Data["kube-proxy-replacement"]
		c.EnableExternalIPs = got[0].Data["enable-external-ips"]
		c.EnableNodePort = got[0].Data["enable-node-port"]
	}
	d.setup.Dataplane.Cilium = c
	return nil
}

// ciliumUnread says that cilium-config in ns could not be read, and, when forbidden, the grant
// that reads it.
func ciliumUnread(ns string, agent bool, err error) string {
	where := "no DaemonSet cilium was seen, so Cilium's own namespace is unknown"
	if agent {
		where = "the cilium agent's DaemonSet runs in namespace " + ns
	}
	msg := fmt.Sprintf("ConfigMap %s/cilium-config could not be read (%s), so whether Cilium replaces kube-proxy is unknown: %v", ns, where, err)
	if apierrors.IsForbidden(err) {
		msg += fmt.Sprintf("; grant get and list on configmaps in namespace %s (a Role and RoleBinding there, or the ClusterRole kubectl-lanaccess-doctor of `kubectl lanaccess manifests rbac`)", ns)
	}
	return msg
}

// readCalico tells whether Calico runs its eBPF dataplane: FELIX_BPFENABLED on calico-node
// wins over FelixConfiguration (felix/config/config_params.go SourcesInDescendingOrder puts
// environment variables above the datastore; env_var_loader.go maps FELIX_BPFENABLED to
// bpfEnabled), and the operator writes that variable from Installation
// spec.calicoNetwork.linuxDataplane.
func (d *discoverer) readCalico(dss []appsv1.DaemonSet) error {
	var agent *appsv1.DaemonSet
	for i := range dss {
		if dss[i].Name == "calico-node" {
			agent = &dss[i]
		}
	}
	if agent == nil {
		return nil
	}
	c := &CalicoDataplane{Agent: fmt.Sprintf("DaemonSet %s/%s", agent.Namespace, agent.Name)}
	d.setup.Dataplane.Calico = c
	if v, ok := felixEnv(*agent, "FELIX_BPFENABLED"); ok {
		c.BPF, _ = strconv.ParseBool(v)
		c.From = fmt.Sprintf("%s env FELIX_BPFENABLED=%s", c.Agent, v)
	}
	if d.dyn == nil {
		if c.From == "" {
			c.Unknown = "no dynamic client: Calico's Installation and FelixConfiguration are not read"
		}
		return nil
	}
	inst, err := d.readInstallation(c)
	if err != nil || c.From != "" {
		return err
	}
	var felix []unstructured.Unstructured
	if err := d.readFirstServedVersion(CalicoFelixConfigurations(), &felix); err != nil {
		return err
	}
	for _, f := range felix {
		if f.GetName() != "default" {
			continue
		}
		// projectcalico/api pkg/apis/projectcalico/v3/felixconfig.go FelixConfigurationSpec:
		// BPFEnabled *bool `json:"bpfEnabled,omitempty"` ("[Default: false]"); the
		// crd.projectcalico.org/v1 CRD carries the same spec.
		if on, found, _ := unstructured.NestedBool(f.Object, "spec", "bpfEnabled"); found {
			c.BPF, c.From = on, fmt.Sprintf("FelixConfiguration default spec.bpfEnabled=%t", on)
			return nil
		}
	}
	c.fromInstallation(inst, len(felix) > 0, d.calicoUnread())
	return nil
}

// calicoInstallation is what the operator's Installation default says, and whether it was read.
type calicoInstallation struct {
	// Listed: the list succeeded (Installations are served); Default: Installation default exists.
	Listed, Default bool
}

// readInstallation reads Installation default's spec.calicoNetwork.linuxDataplane into
// c.Dataplane. A list that fails other than "not installed" is recorded in Partial.
func (d *discoverer) readInstallation(c *CalicoDataplane) (calicoInstallation, error) {
	r := CalicoInstallations()
	items, err := listDynamic(d.ctx, d.dyn, r)
	if err != nil {
		return calicoInstallation{}, d.optional(r.Key(), err)
	}
	d.installed[r.Key()] = true
	out := calicoInstallation{Listed: true}
	for _, it := range items {
		if it.GetName() == "default" {
			out.Default = true
			c.Dataplane, _, _ = unstructured.NestedString(it.Object, "spec", "calicoNetwork", "linuxDataplane")
		}
	}
	return out, nil
}

// CalicoReadKeys are the ReadKeys of Calico's settings LA202 reads: the Installation, then
// FelixConfiguration in each version tried.
func CalicoReadKeys() []string {
	versions := CalicoFelixConfigurations()
	keys := make([]string, 0, 1+len(versions))
	keys = append(keys, CalicoInstallations().Key())
	for _, r := range versions {
		keys = append(keys, r.Key())
	}
	return keys
}

// calicoUnread are the failed reads of Calico's settings, in words ("" when none failed).
func (d *discoverer) calicoUnread() string {
	var out []string
	for _, k := range CalicoReadKeys() {
		if err := d.partial[k]; err != nil {
			out = append(out, k+": "+err.Error())
		}
	}
	return strings.Join(out, "; ")
}

// Calico's Linux dataplanes: tigera/operator api/v1/installation_types.go LinuxDataplaneOption
// ("One of: Iptables, BPF, VPP, Nftables", +kubebuilder:validation:Enum=Iptables;BPF;VPP;Nftables).
const (
	CalicoIptables = "Iptables"
	CalicoBPF      = "BPF"
	CalicoVPP      = "VPP"
	CalicoNftables = "Nftables"
)

// fromInstallation decides from the Installation when neither the agent's environment nor
// FelixConfiguration default's bpfEnabled did; felix: a FelixConfiguration was read; unread:
// the reads that failed.
func (c *CalicoDataplane) fromInstallation(inst calicoInstallation, felix bool, unread string) {
	from := "Installation default spec.calicoNetwork.linuxDataplane=" + c.Dataplane
	switch {
	case c.Dataplane == CalicoBPF:
		c.BPF, c.From = true, from
	case c.Dataplane == CalicoIptables || c.Dataplane == CalicoNftables:
		c.From = from
	case c.Dataplane == CalicoVPP:
		c.From = from
		c.Unmodelled = "Calico's VPP dataplane (" + from + ") implements ClusterIPs, ExternalIPs and LoadBalancerIPs in VPP itself " +
			"(docs.tigera.io, getting-started/kubernetes/vpp/specifics): whether it makes externalIPs local to the nodes is not modelled here"
	case c.Dataplane != "":
		c.Unknown = from + " is none of the operator's values (" + strings.Join([]string{CalicoIptables, CalicoBPF, CalicoVPP, CalicoNftables}, ", ") + ")"
	case unread != "":
		c.Unknown = "whether Calico's eBPF dataplane is on cannot be told: FELIX_BPFENABLED is not set on " + c.Agent +
			", FelixConfiguration default does not set bpfEnabled, and a read failed (" + unread + ")"
	case inst.Default:
		// The operator's default (installation_types.go: "Default: Iptables").
		c.From = "Installation default leaves spec.calicoNetwork.linuxDataplane unset (Iptables)"
	case felix || inst.Listed:
		c.From = "FelixConfiguration default does not set bpfEnabled (default false)"
	default:
		c.Unknown = "neither FELIX_BPFENABLED on " + c.Agent + " nor a readable FelixConfiguration or Installation tells whether the eBPF dataplane is on"
	}
}

func felixEnv(ds appsv1.DaemonSet, name string) (string, bool) {
	for _, c := range ds.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == name && e.ValueFrom == nil {
				return e.Value, true
			}
		}
	}
	return "", false
}

func listDaemonSets(ctx context.Context, c client.Interface) ([]appsv1.DaemonSet, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.AppsV1().DaemonSets(metav1.NamespaceAll).List,
		func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items }))
}
