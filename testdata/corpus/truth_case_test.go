//go:build corpus

package corpus

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// corpusCase is one case directory: its objects and the setup its expect.yaml names.
type corpusCase struct {
	dir     string
	objects []*unstructured.Unstructured
	expect  expectFile
}

// expectFile is the part of expect.yaml the harness needs; the verdicts are for the readers
// and the differential tests.
type expectFile struct {
	Setup   setupSpec          `json:"setup" yaml:"setup"`
	Checks  map[string]verdict `json:"checks" yaml:"checks"`
	Sources []source           `json:"sources,omitempty" yaml:"sources,omitempty"`
}

// setupSpec names the objects that form the setup and the names to ask.
type setupSpec struct {
	Proxy     string `json:"proxy" yaml:"proxy"`
	DNS       string `json:"dns" yaml:"dns"`
	Corefile  string `json:"corefile" yaml:"corefile"`
	Zone      string `json:"zone" yaml:"zone"`
	ProbeHost string `json:"probe_host" yaml:"probe_host"`
}

type verdict struct {
	Status string `json:"status" yaml:"status"`
	Why    string `json:"why" yaml:"why"`
	Cite   string `json:"cite" yaml:"cite"`
	Trap   string `json:"trap,omitempty" yaml:"trap,omitempty"`
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

func loadCase(dir string) (*corpusCase, error) {
	c := &corpusCase{dir: dir}
	objs, err := readObjects(filepath.Join(dir, "objects.yaml"))
	if err != nil {
		return nil, err
	}
	c.objects = objs
	ex, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(ex, &c.expect); err != nil {
		return nil, fmt.Errorf("%s/expect.yaml: %w", dir, err)
	}
	if c.expect.Setup.Zone == "" || c.expect.Setup.ProbeHost == "" {
		return nil, fmt.Errorf("%s/expect.yaml: setup.zone and setup.probe_host are needed to ask CoreDNS", dir)
	}
	return c, nil
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for i, doc := range docSeparator.Split(string(raw), -1) {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s document %d: %w", path, i+1, err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(js) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("%s document %d: %w", path, i+1, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// withVariant returns the case with the objects of a variant file in place of the objects of
// the same kind, namespace and name, and the file's first comment line (what it shows).
func (c *corpusCase) withVariant(path string) (*corpusCase, string, error) {
	repl, err := readObjects(path)
	if err != nil {
		return nil, "", err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	about, _, _ := strings.Cut(string(raw), "\n")
	about = strings.TrimSpace(strings.TrimPrefix(about, "#"))
	vc := &corpusCase{dir: c.dir, expect: c.expect}
	key := func(u *unstructured.Unstructured) string {
		return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
	}
	byKey := map[string]*unstructured.Unstructured{}
	for _, r := range repl {
		byKey[key(r)] = r
	}
	used := map[string]bool{}
	for _, o := range c.objects {
		if r, ok := byKey[key(o)]; ok {
			vc.objects = append(vc.objects, r)
			used[key(o)] = true
			continue
		}
		vc.objects = append(vc.objects, o)
	}
	for k := range byKey {
		if !used[k] {
			return nil, "", fmt.Errorf("%s: %s replaces no object of objects.yaml", path, k)
		}
	}
	return vc, about, nil
}

// typed converts the objects of one kind into T.
func typed[T any](c *corpusCase, kind string) []T {
	var out []T
	for _, u := range c.objects {
		if u.GetKind() != kind {
			continue
		}
		var v T
		js, err := u.MarshalJSON()
		if err == nil && yaml.Unmarshal(js, &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

func (c *corpusCase) configMap(ns, name string) (*corev1.ConfigMap, bool) {
	for _, cm := range typed[corev1.ConfigMap](c, "ConfigMap") {
		if cm.Namespace == ns && cm.Name == name {
			return &cm, true
		}
	}
	return nil, false
}

// workload is one Deployment or DaemonSet (the hostPort form, issue 26) whose container runs
// CoreDNS with -conf.
type workload struct {
	kind, namespace, name string
	spec                  corev1.PodSpec
	container             corev1.Container
	conf                  string
}

func (c *corpusCase) corednsWorkloads() []workload {
	var out []workload
	add := func(kind string, meta metav1.ObjectMeta, spec corev1.PodSpec) {
		for _, ct := range spec.Containers {
			if conf := confArg(ct); conf != "" {
				out = append(out, workload{kind: kind, namespace: meta.Namespace, name: meta.Name, spec: spec, container: ct, conf: conf})
			}
		}
	}
	for _, d := range typed[appsv1.Deployment](c, "Deployment") {
		add("Deployment", d.ObjectMeta, d.Spec.Template.Spec)
	}
	for _, d := range typed[appsv1.DaemonSet](c, "DaemonSet") {
		add("DaemonSet", d.ObjectMeta, d.Spec.Template.Spec)
	}
	return out
}

func confArg(c corev1.Container) string {
	args := append(append([]string{}, c.Command...), c.Args...)
	for i, a := range args {
		if (a == "-conf" || a == "--conf") && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "-conf="); ok {
			return v
		}
	}
	return ""
}

// mountedFile is one file the container sees, from a ConfigMap volume.
type mountedFile struct {
	Path   string `json:"path" yaml:"path"`
	From   string `json:"from" yaml:"from"`
	SubDir bool   `json:"-" yaml:"-"`
}

// layout writes, under root, the files the container sees from its ConfigMap volumes (what
// the kubelet projects: every key, or the items, at the mount path; a subPath mount is one
// file), and /etc/resolv.conf. It returns the files and the mount paths, longest first.
func (c *corpusCase) layout(w workload, root string) ([]mountedFile, []string, error) {
	ns := w.namespace
	vols := map[string]corev1.Volume{}
	for _, v := range w.spec.Volumes {
		vols[v.Name] = v
	}
	var files []mountedFile
	var mounts []string
	for _, vm := range w.container.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok || v.ConfigMap == nil {
			continue
		}
		cm, found := c.configMap(ns, v.ConfigMap.Name)
		if !found {
			if v.ConfigMap.Optional != nil && *v.ConfigMap.Optional {
				if err := os.MkdirAll(filepath.Join(root, vm.MountPath), 0o755); err != nil {
					return nil, nil, err
				}
				mounts = append(mounts, vm.MountPath)
				continue
			}
			return nil, nil, fmt.Errorf("volume %s: ConfigMap %s/%s does not exist, so the pod cannot start", v.Name, ns, v.ConfigMap.Name)
		}
		items := map[string]string{}
		if len(v.ConfigMap.Items) > 0 {
			for _, it := range v.ConfigMap.Items {
				items[it.Key] = it.Path
			}
		} else {
			for k := range cm.Data {
				items[k] = k
			}
		}
		keys := make([]string, 0, len(items))
		for k := range items {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			data, ok := cm.Data[k]
			if !ok {
				continue // the kubelet refuses a missing item unless optional; no case has one
			}
			p := path.Join(vm.MountPath, items[k])
			if vm.SubPath != "" {
				if items[k] != vm.SubPath {
					continue
				}
				p = vm.MountPath
			}
			if err := writeFile(root, p, data); err != nil {
				return nil, nil, err
			}
			files = append(files, mountedFile{Path: p, From: fmt.Sprintf("ConfigMap %s/%s key %s", ns, cm.Name, k)})
		}
		mounts = append(mounts, vm.MountPath)
	}
	if err := writeFile(root, "/etc/resolv.conf", "nameserver 127.0.0.1\n"); err != nil {
		return nil, nil, err
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return files, mounts, nil
}

func writeFile(root, p, data string) error {
	full := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return os.WriteFile(full, []byte(data), 0o644)
}

// services and endpoint slices of the case, for the fake API server the kubernetes plugin reads.
func (c *corpusCase) services() []corev1.Service { return typed[corev1.Service](c, "Service") }
func (c *corpusCase) endpointSlices() []discoveryv1.EndpointSlice {
	return typed[discoveryv1.EndpointSlice](c, "EndpointSlice")
}
func (c *corpusCase) namespaces() []corev1.Namespace { return typed[corev1.Namespace](c, "Namespace") }

// checkIDs are the configuration checks every expect.yaml judges.
var checkIDs = []string{"LA101", "LA102", "LA103", "LA104", "LA105", "LA106", "LA107"}

// skip: the check does not apply to the case's address form (issue 26: LA106 on a setup
// without externalIPs); doctor must SKIP saying why.
var statuses = map[string]bool{"pass": true, "warn": true, "fail": true, "cannot-tell": true, "skip": true}

// TestEveryCaseHasAVerdictPerCheckWithItsSource keeps the corpus usable as a work list: each
// case judges every configuration check, says why and cites where the behaviour is defined.
func TestEveryCaseHasAVerdictPerCheckWithItsSource(t *testing.T) {
	for _, dir := range caseDirs(t) {
		t.Run(dir, func(t *testing.T) {
			c, err := loadCase(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.objects) == 0 {
				t.Fatal("objects.yaml holds no object")
			}
			for _, id := range checkIDs {
				v, ok := c.expect.Checks[id]
				if !ok {
					t.Errorf("no verdict for %s", id)
					continue
				}
				if !statuses[v.Status] {
					t.Errorf("%s: status %q is not one of pass, warn, fail, cannot-tell, skip", id, v.Status)
				}
				if strings.TrimSpace(v.Why) == "" || strings.TrimSpace(v.Cite) == "" {
					t.Errorf("%s: a verdict needs why and cite", id)
				}
			}
			for _, s := range []string{c.expect.Setup.Proxy, c.expect.Setup.DNS} {
				ns, name, _ := strings.Cut(s, "/")
				found := false
				for _, svc := range c.services() {
					found = found || (svc.Namespace == ns && svc.Name == name)
				}
				if !found {
					t.Errorf("setup names Service %s, which objects.yaml does not hold", s)
				}
			}
		})
	}
}
