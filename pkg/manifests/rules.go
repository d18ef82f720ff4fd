package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// roleDecoder decodes the two kinds Rules reads, Role and ClusterRole (rbac/v1), strictly: a
// scheme of that group alone, not client-go's of every API group (kubernetes/scheme, whose
// registration every command paid at start). Made on the first call: no command but the
// tests' reads the rules.
var roleDecoder = sync.OnceValue(func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := rbacv1.AddToScheme(s); err != nil {
		panic(err) // registering rbac/v1's types in an empty scheme cannot fail
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
})

// Rules decodes the rules of the role (Role or ClusterRole) the bundle of g ships, strictly:
// what the tests hold to the permissions the catalogue's entries declare (checks/catalogue).
// The bundle's other kinds (Namespace, ServiceAccount, bindings, ...) are not decoded here;
// TestEveryKubernetesManifestDecodesIntoTypedObjects decodes every document strictly.
func (g Grant) Rules() ([]rbacv1.PolicyRule, error) {
	raw, err := Get(string(g))
	if err != nil {
		return nil, err
	}
	return roleRules(string(g), raw)
}

// roleRules decodes the rules of the one role of the YAML documents raw (the bundle name).
func roleRules(name string, raw []byte) ([]rbacv1.PolicyRule, error) {
	decoder := roleDecoder()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var rules []rbacv1.PolicyRule
	roles := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			continue // not a role
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		switch r := obj.(type) {
		case *rbacv1.Role:
			rules, roles = append(rules, r.Rules...), roles+1
		case *rbacv1.ClusterRole:
			rules, roles = append(rules, r.Rules...), roles+1
		}
	}
	if roles != 1 {
		return nil, fmt.Errorf("%s ships %d roles, want one", name, roles)
	}
	return rules, nil
}

// stripComments drops a YAML document's comment lines (a document of comments only is empty).
func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for line := range bytes.SplitSeq(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
