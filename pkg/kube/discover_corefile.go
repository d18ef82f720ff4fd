package kube

import (
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/zone"
)

// The Corefile is the file CoreDNS is started with: the -conf argument of the CoreDNS
// container (coredns/coremain/run.go confLoader), else "Corefile" in the container's working
// directory (defaultLoader; the official image's WORKDIR is /). It is read from the pod's
// filesystem as the API shows it: every ConfigMap volume of the container at its mount path
// (keys or items, subPath, optional), so that `import` finds what CoreDNS finds. k3s mounts
// coredns-custom at /etc/coredns/custom and imports *.server and *.override from it: those
// are imported files, not a second Corefile.

// CoreDNSContainer returns the container of spec that runs CoreDNS: the one started with
// -conf, else the one whose image is CoreDNS, else the only container (nil when none).
func CoreDNSContainer(spec *corev1.PodSpec) *corev1.Container {
	if spec == nil {
		return nil
	}
	for i := range spec.Containers {
		if confArg(spec.Containers[i]) != "" {
			return &spec.Containers[i]
		}
	}
	for i := range spec.Containers {
		if strings.Contains(strings.ToLower(spec.Containers[i].Image), "coredns") {
			return &spec.Containers[i]
		}
	}
	if len(spec.Containers) == 1 {
		return &spec.Containers[0]
	}
	return nil
}

// ConfPath is the file CoreDNS reads its configuration from in container c.
func ConfPath(c *corev1.Container) string {
	if conf := confArg(*c); conf != "" {
		if !path.IsAbs(conf) {
			return path.Join(workDir(c), conf)
		}
		return path.Clean(conf)
	}
	return path.Join(workDir(c), "Corefile")
}

func workDir(c *corev1.Container) string {
	if c.WorkingDir != "" {
		return c.WorkingDir
	}
	return "/"
}

// confArg returns the file given to CoreDNS with -conf (or --conf), "" when absent.
func confArg(c corev1.Container) string {
	args := append(append([]string{}, c.Command...), c.Args...)
	for i, a := range args {
		for _, flag := range []string{"-conf", "--conf"} {
			if a == flag && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v
			}
		}
	}
	return ""
}

// ProjectedFile is one file of the pod from a ConfigMap key.
type ProjectedFile struct {
	Path      string
	ConfigMap string // name, in the pod's namespace
	Key       string
	Mount     ConfigMapMount
}

// PodFiles builds what container c of spec sees of its filesystem: each ConfigMap volume it
// mounts, with the content of configMaps (by name; a ConfigMap missing from the map is
// unknown: not readable), as the kubelet projects it (every key, or the items; a subPath mount
// is one file; an optional ConfigMap that does not exist is an empty directory). Volumes of
// other kinds are opaque. It returns the files with where each comes from.
func PodFiles(spec *corev1.PodSpec, c *corev1.Container, configMaps map[string]*corev1.ConfigMap, exists func(name string) bool) (*corefile.Files, []ProjectedFile) {
	files := corefile.NewFiles()
	files.Env = literalEnv(c)
	files.WorkDir = workDir(c)
	files.Build = corefile.ReadBuild(c.Image)
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	var out []ProjectedFile
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			continue
		}
		sources, opaque := configMapSources(v)
		if opaque {
			files.MountOpaque(vm.MountPath)
			continue
		}
		mount := ConfigMapMount{Container: c.Name, Volume: v.Name, MountPath: vm.MountPath, SubPath: vm.SubPath}
		entries, projected, known := project(sources, mount, configMaps, exists)
		out = append(out, projected...)
		switch {
		case !known:
			files.MountOpaque(vm.MountPath)
		case vm.SubPath != "":
			if f, ok := entries[path.Clean(vm.SubPath)]; ok {
				files.MountFile(vm.MountPath, f)
			} else {
				files.MountOpaque(vm.MountPath) // the kubelet fails the mount: nothing runs
			}
			out = keepSubPath(out, vm)
		default:
			files.MountVolume(vm.MountPath, entries)
		}
	}
	mountEtcHosts(files, spec, c)
	return files, out
}

// mountEtcHosts adds the /etc/hosts the kubelet writes into every container of a pod that does
// not use the host's network and does not mount that path itself (kubernetes
// pkg/kubelet/kubelet_pods.go makeMounts and managedHostsFileContent; the file as documented in
// kubernetes/website content/en/docs/tasks/network/customize-hosts-file-for-pods.md): the
// localhost lines, the pod's own address and host name, then spec.hostAliases. The hosts plugin
// reads it when no file is named. The pod's own line is one label (its host name) unless
// spec.subdomain gives it a cluster name, whose address is the pod's own: then the file is left
// unknown. The single-label line is left out (the address differs per pod), so a query for the
// bare host name of a pod is the one answer of this file the model does not give.
func mountEtcHosts(files *corefile.Files, spec *corev1.PodSpec, c *corev1.Container) {
	for _, vm := range c.VolumeMounts {
		if path.Clean(vm.MountPath) == "/etc/hosts" || path.Clean(vm.MountPath) == "/etc" {
			return
		}
	}
	if spec.HostNetwork || spec.Subdomain != "" {
		return // the node's /etc/hosts, or a name of the zone with the pod's own address
	}
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	if len(spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, h := range spec.HostAliases {
			b.WriteString(h.IP + "\t" + strings.Join(h.Hostnames, "\t") + "\n")
		}
	}
	files.MountFile("/etc/hosts", corefile.File{Content: b.String(), Object: "the kubelet's /etc/hosts", Key: "hosts"})
}

// project lists the files a volume's ConfigMap sources project, keyed by relative path; known
// is false when one of its ConfigMaps could not be read.
func project(sources []corev1.ConfigMapProjection, mount ConfigMapMount, configMaps map[string]*corev1.ConfigMap, exists func(string) bool) (map[string]corefile.File, []ProjectedFile, bool) {
	entries := map[string]corefile.File{}
	var out []ProjectedFile
	known := true
	for _, src := range sources {
		cm := configMaps[src.Name]
		switch {
		case cm == nil && exists != nil && !exists(src.Name) && src.Optional != nil && *src.Optional:
			continue // an optional ConfigMap that does not exist projects nothing
		case cm == nil:
			known = false
			continue
		}
		if len(src.Items) > 0 {
			mount.Items = map[string]string{}
		}
		for key, rel := range projectedKeys(cm, src.Items) {
			if mount.Items != nil {
				mount.Items[key] = rel
			}
			content, ok := cm.Data[key]
			if !ok {
				content = string(cm.BinaryData[key])
			}
			entries[rel] = corefile.File{Content: content, Object: kubeobj.ConfigMapRef(cm), Key: key, Source: cm}
			out = append(out, ProjectedFile{Path: path.Join(mount.MountPath, rel), ConfigMap: cm.Name, Key: key, Mount: mount})
		}
	}
	return entries, out, known
}

// keepSubPath keeps, of the files of a subPath mount, the one it mounts, at the mount path.
func keepSubPath(files []ProjectedFile, vm corev1.VolumeMount) []ProjectedFile {
	var out []ProjectedFile
	for _, f := range files {
		if f.Mount.MountPath != vm.MountPath {
			out = append(out, f)
			continue
		}
		if path.Clean(strings.TrimPrefix(f.Path, vm.MountPath+"/")) == path.Clean(vm.SubPath) {
			f.Path = vm.MountPath
			out = append(out, f)
		}
	}
	return out
}

// configMapSources are the ConfigMaps a volume projects; opaque when it projects anything
// else (a Secret, the downward API, a token) or is not a ConfigMap volume.
func configMapSources(v corev1.Volume) ([]corev1.ConfigMapProjection, bool) {
	switch {
	case v.ConfigMap != nil:
		return []corev1.ConfigMapProjection{{LocalObjectReference: v.ConfigMap.LocalObjectReference, Items: v.ConfigMap.Items, Optional: v.ConfigMap.Optional}}, false
	case v.Projected != nil:
		var out []corev1.ConfigMapProjection
		for _, s := range v.Projected.Sources {
			if s.ConfigMap == nil {
				return nil, true
			}
			out = append(out, *s.ConfigMap)
		}
		return out, false
	}
	return nil, true
}

// projectedKeys maps each key the kubelet projects to its relative path.
func projectedKeys(cm *corev1.ConfigMap, items []corev1.KeyToPath) map[string]string {
	out := map[string]string{}
	if len(items) > 0 {
		for _, it := range items {
			out[it.Key] = it.Path
		}
		return out
	}
	for k := range cm.Data {
		out[k] = k
	}
	for k := range cm.BinaryData {
		out[k] = k
	}
	return out
}

// literalEnv are the container's environment variables with a literal value.
func literalEnv(c *corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil && !strings.Contains(e.Value, "$(") {
			out[e.Name] = e.Value
		}
	}
	return out
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

// readCorefile finds the file CoreDNS reads in the DNS pods (or the ConfigMap named with
// --configmap), the ConfigMap and key it comes from, and loads it with its imports.
func (d *discoverer) readCorefile() error {
	dns := d.setup.DNSService
	ns := dns.Namespace
	if d.sel.ConfigMap != "" {
		ns, _ = splitName(d.sel.ConfigMap, dns.Namespace)
	}
	cms, err := d.configMapsIn(ns)
	if err != nil {
		return err
	}
	if err := d.setup.Unread(ReadKey("", "configmaps", ns)); err != nil {
		if d.sel.ConfigMap != "" {
			return &UsageError{Message: fmt.Sprintf("cannot read ConfigMaps in namespace %s: %v", ns, err), Fix: "grant list on configmaps in " + ns}
		}
		return nil // LA104 skips with the reason recorded in Partial
	}
	byName := map[string]*corev1.ConfigMap{}
	for i := range cms {
		byName[cms[i].Name] = &cms[i]
	}
	spec := d.dnsPodSpec()
	c := CoreDNSContainer(spec)
	if d.sel.ConfigMap != "" {
		return d.readNamedCorefile(ns, byName, spec, c)
	}
	if c == nil {
		return d.corefileWithoutPods(cms)
	}
	conf := ConfPath(c)
	files, projected := PodFiles(spec, c, byName, func(name string) bool { return byName[name] != nil })
	var src *ProjectedFile
	for i := range projected {
		if path.Clean(projected[i].Path) == conf {
			src = &projected[i]
		}
	}
	d.setup.CorefileConf = conf
	if src == nil {
		return d.confNotProjected(c, conf, spec, byName, cms)
	}
	d.setup.ConfigMap = byName[src.ConfigMap]
	d.setup.CorefileKey = src.Key
	d.setup.CorefileMounts = mountsOf(spec, src.ConfigMap)
	d.setup.loadCorefile(files, conf)
	return nil
}

// confNotProjected: no ConfigMap of the pod provides the file CoreDNS reads. The ConfigMap
// mounted where that file should be (else the only one the container mounts) is kept, so that
// LA104 reports the missing file; with several candidates the user names one.
func (d *discoverer) confNotProjected(c *corev1.Container, conf string, spec *corev1.PodSpec, byName map[string]*corev1.ConfigMap, cms []corev1.ConfigMap) error {
	dns := d.setup.DNSService
	var mounted, missing []string
	under := false
	for _, vm := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			srcs, opaque := configMapSources(v)
			if v.Name != vm.Name || opaque {
				continue
			}
			for _, src := range srcs {
				cm := byName[src.Name]
				switch {
				case cm == nil:
					missing = append(missing, src.Name)
				case conf == path.Clean(vm.MountPath) || strings.HasPrefix(conf, path.Clean(vm.MountPath)+"/"):
					mounted, under = append([]string{src.Name}, mounted...), true
				case !containsString(mounted, src.Name):
					mounted = append(mounted, src.Name)
				}
			}
		}
	}
	if len(mounted) == 1 || (len(mounted) > 0 && under) {
		d.setup.ConfigMap = byName[mounted[0]]
		d.setup.CorefileMounts = mountsOf(spec, mounted[0])
		return nil // the file is missing: LA104-KEY-MISSING
	}
	msg := fmt.Sprintf("CoreDNS in the pods of Service %s/%s reads %s, which no ConfigMap of the pod provides", dns.Namespace, dns.Name, conf)
	if len(missing) > 0 {
		msg = fmt.Sprintf("the pods of Service %s/%s mount ConfigMap %s, which does not exist", dns.Namespace, dns.Name, strings.Join(missing, ", "))
	}
	return &UsageError{Message: msg, Candidates: corefileCandidates(cms, dns.Namespace), Fix: "name the ConfigMap holding the Corefile with --configmap NAMESPACE/NAME"}
}

// StartedWithConf reports whether container c gives CoreDNS its configuration with -conf:
// without it CoreDNS reads Corefile in its working directory, and when that file does not
// exist serves its built-in default (whoami and log on :53; core/dnsserver/register.go
// DefaultInput).
func StartedWithConf(c *corev1.Container) bool { return confArg(*c) != "" }

// readNamedCorefile reads the ConfigMap named with --configmap: through the pod's files when
// the DNS pods mount it, else alone (its imports are then unknown).
func (d *discoverer) readNamedCorefile(ns string, byName map[string]*corev1.ConfigMap, spec *corev1.PodSpec, c *corev1.Container) error {
	_, name := splitName(d.sel.ConfigMap, d.setup.DNSService.Namespace)
	cm := byName[name]
	if cm == nil {
		cms := make([]corev1.ConfigMap, 0, len(byName))
		for _, v := range byName {
			cms = append(cms, *v)
		}
		return &UsageError{
			Message:    fmt.Sprintf("ConfigMap %s/%s not found", ns, name),
			Candidates: corefileCandidates(cms, ns),
			Fix:        "check the name given to --configmap",
		}
	}
	d.setup.ConfigMap = cm
	if c != nil && ns == d.setup.DNSService.Namespace {
		conf := ConfPath(c)
		files, projected := PodFiles(spec, c, byName, func(n string) bool { return byName[n] != nil })
		for _, p := range projected {
			if p.ConfigMap == name && path.Clean(p.Path) == conf {
				d.setup.CorefileConf, d.setup.CorefileKey = conf, p.Key
				d.setup.CorefileMounts = mountsOf(spec, name)
				d.setup.loadCorefile(files, conf)
				return nil
			}
		}
		d.setup.CorefileMounts = mountsOf(spec, name)
	}
	d.setup.CorefileKey = corefileKeyAlone(cm)
	return nil
}

// corefileWithoutPods: no pod tells which file CoreDNS reads; the only ConfigMap of the
// namespace holding a Corefile key is taken, read alone.
func (d *discoverer) corefileWithoutPods(cms []corev1.ConfigMap) error {
	dns := d.setup.DNSService
	var withCorefile []*corev1.ConfigMap
	for i := range cms {
		if _, ok := cms[i].Data["Corefile"]; ok {
			withCorefile = append(withCorefile, &cms[i])
		}
	}
	if len(withCorefile) == 1 {
		d.setup.ConfigMap, d.setup.CorefileKey = withCorefile[0], "Corefile"
		return nil
	}
	return &UsageError{
		Message:    fmt.Sprintf("no Deployment or pod matches the selector of Service %s/%s, so the ConfigMap it reads is unknown", dns.Namespace, dns.Name),
		Candidates: corefileCandidates(cms, dns.Namespace),
		Fix:        "name the ConfigMap holding the Corefile with --configmap NAMESPACE/NAME",
	}
}

// corefileKeyAlone is the key of a ConfigMap read without the pod: "Corefile", else its only key.
func corefileKeyAlone(cm *corev1.ConfigMap) string {
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

// mountsOf lists the mounts of ConfigMap name in the containers of spec.
func mountsOf(spec *corev1.PodSpec, name string) []ConfigMapMount {
	var out []ConfigMapMount
	for _, v := range spec.Volumes {
		srcs, _ := configMapSources(v)
		var items map[string]string
		found := false
		for _, s := range srcs {
			if s.Name != name {
				continue
			}
			found = true
			for _, it := range s.Items {
				if items == nil {
					items = map[string]string{}
				}
				items[it.Key] = it.Path
			}
		}
		if !found {
			continue
		}
		for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			for _, vm := range c.VolumeMounts {
				if vm.Name == v.Name {
					out = append(out, ConfigMapMount{Container: c.Name, Volume: v.Name, MountPath: vm.MountPath, SubPath: vm.SubPath, Items: items})
				}
			}
		}
	}
	return out
}

// loadCorefile loads the Corefile from the pod's files.
func (s *Setup) loadCorefile(files *corefile.Files, conf string) {
	name := fmt.Sprintf("ConfigMap %s/%s key %s", s.ConfigMap.Namespace, s.ConfigMap.Name, s.CorefileKey)
	s.Corefile, s.CorefileErr = corefile.Load(name, files, conf)
	if s.CorefileErr != nil {
		s.Corefile = nil
	}
}

// parseCorefile parses ConfigMap.Data[CorefileKey] alone when discovery did not load it from
// the pod's files (a Setup built by hand, a ConfigMap read without its pods).
func (s *Setup) parseCorefile() {
	if s.Corefile != nil || s.CorefileErr != nil || s.ConfigMap == nil || s.CorefileKey == "" {
		return
	}
	text, ok := s.ConfigMap.Data[s.CorefileKey]
	if !ok {
		return
	}
	name := fmt.Sprintf("ConfigMap %s/%s key %s", s.ConfigMap.Namespace, s.ConfigMap.Name, s.CorefileKey)
	s.Corefile, s.CorefileErr = corefile.Parse(name, []byte(text))
	if s.CorefileErr != nil {
		s.Corefile = nil
	}
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

// pickZone takes the zone named by the user, else the one zone a template answers A for (in
// a server block of its own, or through zones written on the template, in any block: the
// template README's pattern serves the zone from the "." block), else the only zone a block
// serves besides ".". A named zone is not checked here: a Corefile that does not serve it is
// LA104's finding, not a usage error.
func (d *discoverer) pickZone() error {
	if !d.sel.Zone.IsZero() {
		d.setup.Zone = d.sel.Zone
		return nil
	}
	cf := d.setup.Corefile
	if cf == nil {
		return nil // no readable Corefile: LA104 says why
	}
	zones := cf.TemplateAZones()
	if len(zones) == 0 {
		// a zone answered by k8s_gateway from the API (zone_k8s_gateway.go)
		zones = K8sGatewayZones(cf)
	}
	if len(zones) == 1 {
		return d.takeZone(zones[0], cf.Name)
	}
	where := cf.Name
	if len(zones) > 1 {
		return &UsageError{Message: fmt.Sprintf("%d zones of %s answer A with a template", len(zones), where), Candidates: zones, Fix: "name the LAN zone with --zone"}
	}
	var all []string
	for i := range cf.Blocks {
		for _, z := range cf.Blocks[i].Zones() {
			if z != "." && !strings.HasSuffix(z, ".arpa.") && !containsString(all, z) {
				all = append(all, z)
			}
		}
	}
	if len(all) == 1 {
		return d.takeZone(all[0], cf.Name) // e.g. served by `file`: LA104 explains what is missing
	}
	msg := fmt.Sprintf("no server block of %s answers A with a template", where)
	if len(cf.Incomplete) > 0 {
		msg += " (it imports what the API does not show: " + strings.Join(cf.Incomplete, "; ") + ")"
	}
	return &UsageError{Message: msg, Candidates: all, Fix: "name the LAN zone with --zone"}
}

// takeZone takes a zone written in the Corefile: the ConfigMap is anyone's to write, so a key
// that is not a DNS name (zone.Parse) is a usage error that names it, never a zone.
func (d *discoverer) takeZone(key, where string) error {
	z, err := zone.Parse(key)
	if err != nil {
		return &UsageError{Message: fmt.Sprintf("the zone %q of %s is not a DNS name the LAN DNS can serve: %v", key, where, err), Fix: "name the LAN zone with --zone"}
	}
	d.setup.Zone = z
	return nil
}
