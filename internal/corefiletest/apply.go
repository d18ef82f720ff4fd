package corefiletest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
)

// A remediation is text for people to paste into a shell. ApplyRemediation reads it with a shell
// parser (mvdan.cc/sh, the quoting the remediations are written with) and applies its kubectl
// commands to objects as the API server would: `patch --type=merge` (RFC 7386), `patch
// --type=json` (RFC 6902 add/replace/remove), `scale --replicas`, and `apply -f -` of a
// here-document. Comments and other commands are ignored. It says which commands it applied.

// ApplyRemediation applies the kubectl commands of text to objs, in place of the objects they
// change (an apply of a new object adds it).
func ApplyRemediation(objs []runtime.Object, text string) ([]runtime.Object, []string, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(text), "remediation")
	if err != nil {
		return objs, nil, fmt.Errorf("the remediation does not parse as a shell script: %w", err)
	}
	var applied []string
	var walkErr error
	syntax.Walk(f, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok || walkErr != nil {
			return walkErr == nil
		}
		call, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		var words []string
		for _, w := range call.Args {
			lit, err := expand.Literal(nil, w)
			if err != nil {
				walkErr = err
				return false
			}
			words = append(words, lit)
		}
		if words[0] != "kubectl" {
			return true
		}
		var doc strings.Builder
		for _, r := range st.Redirs {
			if r.Hdoc != nil {
				for _, p := range r.Hdoc.Parts {
					if l, ok := p.(*syntax.Lit); ok {
						doc.WriteString(l.Value)
					}
				}
			}
		}
		var did bool
		objs, did, walkErr = kubectl(objs, words[1:], doc.String())
		if did {
			applied = append(applied, strings.Join(words, " "))
		}
		return false
	})
	return objs, applied, walkErr
}

func kubectl(objs []runtime.Object, args []string, doc string) ([]runtime.Object, bool, error) {
	ns, typ, patch, replicas := "", "strategic", "", -1
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" && i+1 < len(args):
			ns, i = args[i+1], i+1
		case a == "-p" && i+1 < len(args):
			patch, i = args[i+1], i+1
		case strings.HasPrefix(a, "--type="):
			typ = strings.TrimPrefix(a, "--type=")
		case strings.HasPrefix(a, "--replicas="):
			n, err := strconv.Atoi(strings.TrimPrefix(a, "--replicas="))
			if err != nil {
				return objs, false, err
			}
			replicas = n
		default:
			rest = append(rest, a)
		}
	}
	switch {
	case len(rest) == 3 && rest[0] == "patch":
		return patchObject(objs, ns, rest[1], rest[2], typ, patch)
	case len(rest) == 2 && rest[0] == "scale" && replicas >= 0:
		kind, name, _ := strings.Cut(rest[1], "/")
		return patchObject(objs, ns, kind, name, "merge", fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	case len(rest) == 3 && rest[0] == "apply" && rest[1] == "-f" && rest[2] == "-":
		added, err := fixture.Decode("remediation", []byte(doc))
		if err != nil {
			return objs, false, err
		}
		for _, a := range added {
			objs = replaceOrAdd(objs, a)
		}
		return objs, true, nil
	}
	return objs, false, nil // edit, describe, get...: nothing to apply
}

var kinds = map[string]string{"configmap": "ConfigMap", "service": "Service", "deployment": "Deployment", "pdb": "PodDisruptionBudget"}

func patchObject(objs []runtime.Object, ns, kind, name, typ, patch string) ([]runtime.Object, bool, error) {
	want := kinds[strings.ToLower(kind)]
	for i, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil || m.GetNamespace() != ns || m.GetName() != name || kindOf(o) != want {
			continue
		}
		raw, err := json.Marshal(o)
		if err != nil {
			return objs, false, err
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return objs, false, err
		}
		switch typ {
		case "merge":
			var p any
			if err := json.Unmarshal([]byte(patch), &p); err != nil {
				return objs, false, err
			}
			doc = mergePatch(doc, p)
		case "json":
			var ops []struct {
				Op    string `json:"op"`
				Path  string `json:"path"`
				Value any    `json:"value"`
			}
			if err := json.Unmarshal([]byte(patch), &ops); err != nil {
				return objs, false, err
			}
			for _, op := range ops {
				if doc, err = jsonPatch(doc, op.Op, strings.Split(strings.TrimPrefix(op.Path, "/"), "/"), op.Value); err != nil {
					return objs, false, err
				}
			}
		default:
			return objs, false, fmt.Errorf("patch type %q is not applied here", typ)
		}
		if dm, ok := doc.(map[string]any); ok {
			dm["apiVersion"], dm["kind"] = gvk(o)
		}
		out, err := json.Marshal(doc)
		if err != nil {
			return objs, false, err
		}
		decoded, err := fixture.Decode("patched", out)
		if err != nil || len(decoded) != 1 {
			return objs, false, fmt.Errorf("the patched %s %s/%s does not decode: %v", kind, ns, name, err)
		}
		objs[i] = decoded[0]
		return objs, true, nil
	}
	return objs, false, fmt.Errorf("%s %s/%s not found", kind, ns, name)
}

// gvk is the object's group, version and kind, from the client-go scheme for typed objects.
func gvk(o runtime.Object) (string, string) {
	if k := o.GetObjectKind().GroupVersionKind(); k.Kind != "" {
		return k.GroupVersion().String(), k.Kind
	}
	kinds, _, err := scheme.Scheme.ObjectKinds(o)
	if err != nil || len(kinds) == 0 {
		return "", ""
	}
	return kinds[0].GroupVersion().String(), kinds[0].Kind
}

func kindOf(o runtime.Object) string { _, k := gvk(o); return k }

// mergePatch is RFC 7386.
func mergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = mergePatch(d[k], v)
	}
	return d
}

// jsonPatch applies one RFC 6902 operation (add, replace, remove) at path.
func jsonPatch(doc any, op string, path []string, value any) (any, error) {
	if len(path) == 0 {
		return value, nil
	}
	key := strings.ReplaceAll(strings.ReplaceAll(path[0], "~1", "/"), "~0", "~")
	switch d := doc.(type) {
	case map[string]any:
		if len(path) == 1 {
			if op == "remove" {
				delete(d, key)
			} else {
				d[key] = value
			}
			return d, nil
		}
		next, ok := d[key]
		if !ok && op == "add" {
			next = map[string]any{}
		}
		v, err := jsonPatch(next, op, path[1:], value)
		d[key] = v
		return d, err
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i > len(d) {
			return d, fmt.Errorf("bad index %q", key)
		}
		if len(path) == 1 {
			switch op {
			case "remove":
				return append(d[:i], d[i+1:]...), nil
			case "add":
				return append(d[:i], append([]any{value}, d[i:]...)...), nil
			}
			d[i] = value
			return d, nil
		}
		v, err := jsonPatch(d[i], op, path[1:], value)
		d[i] = v
		return d, err
	}
	return doc, fmt.Errorf("cannot apply %s at %s", op, strings.Join(path, "/"))
}

// replaceOrAdd puts o in place of the object of the same kind, namespace and name, else adds it.
func replaceOrAdd(objs []runtime.Object, o runtime.Object) []runtime.Object {
	m, err := meta.Accessor(o)
	if err != nil {
		return objs
	}
	for i, x := range objs {
		xm, err := meta.Accessor(x)
		if err == nil && kindOf(x) == kindOf(o) && xm.GetNamespace() == m.GetNamespace() && xm.GetName() == m.GetName() {
			objs[i] = o
			return objs
		}
	}
	return append(objs, o)
}

// MarshalYAML is for test failure messages.
func MarshalYAML(o runtime.Object) string {
	b, _ := yaml.Marshal(o)
	return string(b)
}
