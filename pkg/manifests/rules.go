package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// Rules decodes the rules of the role (Role or ClusterRole) the bundle of g ships, strictly:
// what the tests hold to the permissions the catalogue's entries declare (checks/catalogue).
func (g Grant) Rules() ([]rbacv1.PolicyRule, error) {
	raw, err := Get(string(g))
	if err != nil {
		return nil, err
	}
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var rules []rbacv1.PolicyRule
	roles := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", g, err)
		}
		switch r := obj.(type) {
		case *rbacv1.Role:
			rules, roles = append(rules, r.Rules...), roles+1
		case *rbacv1.ClusterRole:
			rules, roles = append(rules, r.Rules...), roles+1
		}
	}
	if roles != 1 {
		return nil, fmt.Errorf("%s ships %d roles, want one", g, roles)
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
