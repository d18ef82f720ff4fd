package kube

import (
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
)

// mountedConfigMap is a ConfigMap volume of the DNS pod template and where it is mounted.
type mountedConfigMap struct {
	name   string
	mounts []ConfigMapMount
	// confPaths are the files CoreDNS is told to read (-conf), per container.
	confPaths []string
}

// dnsPodSpec is the pod template of the DNS workload, else the spec of its first pod.
func (d *discoverer) dnsPodSpec() *corev1.PodSpec {
	if w := d.setup.DNSWorkload; w != nil {
		return &w.Spec.Template.Spec
	}
	if len(d.setup.DNSPods) > 0 {
		return &d.setup.DNSPods[0].Spec
	}
	return nil
}

// mountedConfigMaps lists the ConfigMap volumes that some container mounts.
func mountedConfigMaps(spec *corev1.PodSpec) []mountedConfigMap {
	if spec == nil {
		return nil
	}
	var out []mountedConfigMap
	for _, v := range spec.Volumes {
		name, items := configMapOfVolume(v)
		if name == "" {
			continue
		}
		m := mountedConfigMap{name: name}
		for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			for _, vm := range c.VolumeMounts {
				if vm.Name != v.Name {
					continue
				}
				m.mounts = append(m.mounts, ConfigMapMount{Container: c.Name, Volume: v.Name, MountPath: vm.MountPath, SubPath: vm.SubPath, Items: items})
				if conf := confArg(c); conf != "" && !containsString(m.confPaths, conf) {
					m.confPaths = append(m.confPaths, conf)
				}
			}
		}
		if len(m.mounts) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// configMapOfVolume returns the ConfigMap a volume projects and its key->path items.
func configMapOfVolume(v corev1.Volume) (string, map[string]string) {
	items := func(kp []corev1.KeyToPath) map[string]string {
		if len(kp) == 0 {
			return nil
		}
		m := map[string]string{}
		for _, it := range kp {
			m[it.Key] = it.Path
		}
		return m
	}
	if v.ConfigMap != nil {
		return v.ConfigMap.Name, items(v.ConfigMap.Items)
	}
	if v.Projected != nil {
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil {
				return src.ConfigMap.Name, items(src.ConfigMap.Items)
			}
		}
	}
	return "", nil
}

// confArg returns the file given to CoreDNS with -conf (or --conf), "" when absent.
func confArg(c corev1.Container) string {
	args := append(append([]string{}, c.Command...), c.Args...)
	for i, a := range args {
		for _, flag := range []string{"-conf", "--conf"} {
			if a == flag && i+1 < len(args) {
				return args[i+1]
			}
			if strings.HasPrefix(a, flag+"=") {
				return strings.TrimPrefix(a, flag+"=")
			}
		}
	}
	return ""
}

// corefileKey finds the ConfigMap key CoreDNS reads: the -conf file mapped back through the
// mount (and its items). When no -conf file maps through a mount, "Corefile", else the only
// key. "" when CoreDNS reads a key the ConfigMap does not have (LA104 reports it).
func corefileKey(cm *corev1.ConfigMap, m mountedConfigMap) string {
	keyForPath := func(items map[string]string, rel string) string {
		for k, p := range items {
			if path.Clean(p) == path.Clean(rel) {
				return k
			}
		}
		if items == nil {
			return rel
		}
		return ""
	}
	mapped := false
	for _, conf := range m.confPaths {
		conf = path.Clean(conf)
		for _, mt := range m.mounts {
			dir := path.Clean(mt.MountPath)
			var key string
			switch {
			case mt.SubPath != "" && conf == dir:
				key = keyForPath(mt.Items, mt.SubPath)
			case mt.SubPath == "" && strings.HasPrefix(conf, dir+"/"):
				key = keyForPath(mt.Items, strings.TrimPrefix(conf, dir+"/"))
			default:
				continue
			}
			mapped = true
			if _, ok := cm.Data[key]; ok && key != "" {
				return key
			}
		}
	}
	if mapped {
		return ""
	}
	if _, ok := cm.Data["Corefile"]; ok {
		return "Corefile"
	}
	if len(cm.Data) == 1 {
		for k := range cm.Data {
			return k
		}
	}
	return ""
}

// readCorefile finds the ConfigMap the DNS pods mount (or the one named), its Corefile key,
// the mounts, and parses the Corefile.
func (d *discoverer) readCorefile() error {
	dns := d.setup.DNSService
	mounted := mountedConfigMaps(d.dnsPodSpec())
	var chosen mountedConfigMap
	var cm *corev1.ConfigMap
	if d.sel.ConfigMap != "" {
		ns, name := splitName(d.sel.ConfigMap, dns.Namespace)
		cms, err := d.configMapsIn(ns)
		if err != nil {
			return err
		}
		if err := d.setup.Unread(ReadKey("", "configmaps", ns)); err != nil {
			return &UsageError{Message: fmt.Sprintf("cannot read ConfigMaps in namespace %s: %v", ns, err), Fix: "grant list on configmaps in " + ns}
		}
		cm = findConfigMap(cms, name)
		if cm == nil {
			return &UsageError{
				Message:    fmt.Sprintf("ConfigMap %s/%s not found", ns, name),
				Candidates: corefileCandidates(cms, ns),
				Fix:        "check the name given to --configmap",
			}
		}
		for _, m := range mounted {
			if m.name == cm.Name && ns == dns.Namespace {
				chosen = m
			}
		}
	} else {
		cms, err := d.configMapsIn(dns.Namespace)
		if err != nil {
			return err
		}
		if d.setup.Unread(ReadKey("", "configmaps", dns.Namespace)) != nil {
			return nil // LA104 skips with the reason recorded in Partial
		}
		if chosen, cm, err = d.pickMountedConfigMap(cms, mounted); err != nil {
			return err
		}
	}
	d.setup.ConfigMap = cm
	d.setup.CorefileMounts = chosen.mounts
	if len(chosen.confPaths) > 0 {
		d.setup.CorefileConf = chosen.confPaths[0]
	}
	d.setup.CorefileKey = corefileKey(cm, chosen)
	if d.setup.CorefileKey == "" {
		return nil // LA104 reports a ConfigMap without a Corefile
	}
	d.setup.parseCorefile()
	return nil
}

// parseCorefile parses ConfigMap.Data[CorefileKey] once.
func (s *Setup) parseCorefile() {
	if s.Corefile != nil || s.CorefileErr != nil || s.ConfigMap == nil || s.CorefileKey == "" {
		return
	}
	name := fmt.Sprintf("ConfigMap %s/%s key %s", s.ConfigMap.Namespace, s.ConfigMap.Name, s.CorefileKey)
	s.Corefile, s.CorefileErr = corefile.Parse(name, []byte(s.ConfigMap.Data[s.CorefileKey]))
}

func (d *discoverer) pickMountedConfigMap(cms []corev1.ConfigMap, mounted []mountedConfigMap) (mountedConfigMap, *corev1.ConfigMap, error) {
	dns := d.setup.DNSService
	type pick struct {
		m  mountedConfigMap
		cm *corev1.ConfigMap
	}
	var found []pick
	for _, m := range mounted {
		if cm := findConfigMap(cms, m.name); cm != nil {
			found = append(found, pick{m, cm})
		}
	}
	if len(found) > 1 {
		// Prefer the ConfigMaps that hold the file CoreDNS reads.
		var withConf []pick
		for _, p := range found {
			if corefileKey(p.cm, p.m) != "" {
				withConf = append(withConf, p)
			}
		}
		if len(withConf) > 0 {
			found = withConf
		}
	}
	switch {
	case len(found) == 1:
		return found[0].m, found[0].cm, nil
	case len(found) > 1:
		var names []string
		for _, p := range found {
			names = append(names, dns.Namespace+"/"+p.cm.Name)
		}
		return mountedConfigMap{}, nil, &UsageError{
			Message:    fmt.Sprintf("the pods of Service %s/%s mount %d ConfigMaps with a Corefile", dns.Namespace, dns.Name, len(found)),
			Candidates: names,
			Fix:        "name the one CoreDNS reads with --configmap NAMESPACE/NAME",
		}
	}
	// No mounted ConfigMap found (no pods or Deployment, or it is missing): fall back to the
	// only ConfigMap of the namespace that holds a Corefile.
	var withCorefile []*corev1.ConfigMap
	for i := range cms {
		if _, ok := cms[i].Data["Corefile"]; ok {
			withCorefile = append(withCorefile, &cms[i])
		}
	}
	if len(withCorefile) == 1 && len(mounted) == 0 {
		return mountedConfigMap{}, withCorefile[0], nil
	}
	msg := fmt.Sprintf("the pods of Service %s/%s mount no ConfigMap", dns.Namespace, dns.Name)
	switch {
	case d.dnsPodSpec() == nil:
		msg = fmt.Sprintf("no Deployment or pod matches the selector of Service %s/%s, so the ConfigMap it reads is unknown", dns.Namespace, dns.Name)
	case len(mounted) > 0:
		var names []string
		for _, m := range mounted {
			names = append(names, m.name)
		}
		msg = fmt.Sprintf("the pods of Service %s/%s mount ConfigMap %s, which does not exist", dns.Namespace, dns.Name, strings.Join(names, ", "))
	}
	return mountedConfigMap{}, nil, &UsageError{
		Message:    msg,
		Candidates: corefileCandidates(cms, dns.Namespace),
		Fix:        "name the ConfigMap holding the Corefile with --configmap NAMESPACE/NAME",
	}
}

func findConfigMap(cms []corev1.ConfigMap, name string) *corev1.ConfigMap {
	for i := range cms {
		if cms[i].Name == name {
			return &cms[i]
		}
	}
	return nil
}

// corefileCandidates lists the ConfigMaps of ns that hold a Corefile key.
func corefileCandidates(cms []corev1.ConfigMap, ns string) []string {
	var out []string
	for _, cm := range cms {
		if _, ok := cm.Data["Corefile"]; ok {
			out = append(out, ns+"/"+cm.Name)
		}
	}
	sort.Strings(out)
	return out
}

// pickZone takes the zone named by the user, else the zone of the one block with a
// `template IN A` outside ".", else the only zone block. A named zone is not checked here:
// a Corefile that does not serve it is LA104's finding, not a usage error.
func (d *discoverer) pickZone() error {
	if d.sel.Zone != "" {
		d.setup.Zone = corefile.NormalizeZone(d.sel.Zone)
		return nil
	}
	cf := d.setup.Corefile
	if cf == nil {
		return nil // no readable Corefile: LA104 says why
	}
	var zones []string
	for _, b := range cf.TemplateABlocks() {
		for _, z := range b.Zones() {
			if z != "." && !containsString(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	if len(zones) == 1 {
		d.setup.Zone = zones[0]
		return nil
	}
	where := cf.Name
	if len(zones) > 1 {
		return &UsageError{Message: fmt.Sprintf("%d zones of %s answer A with a template", len(zones), where), Candidates: zones, Fix: "name the LAN zone with --zone"}
	}
	var all []string
	for i := range cf.Blocks {
		for _, z := range cf.Blocks[i].Zones() {
			if z != "." && !containsString(all, z) {
				all = append(all, z)
			}
		}
	}
	if len(all) == 1 {
		d.setup.Zone = all[0] // e.g. served by `file`: LA104 explains what is missing
		return nil
	}
	return &UsageError{Message: fmt.Sprintf("no server block of %s answers A with a template", where), Candidates: all, Fix: "name the LAN zone with --zone"}
}
