package faults

import (
	"context"
	"errors"
	"fmt"
	"os"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/internal/fixture"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/pki"
	"github.com/lanaccess/kubectl-lanaccess/pkg/manifests"
)

// RBACNamespace holds the ServiceAccounts the lab makes for permission tests.
const RBACNamespace = "lab-rbac"

// Grant is a set of rules, cluster-wide (Namespace "") or in one namespace.
type Grant struct {
	Namespace string
	Rules     []rbacv1.PolicyRule
}

// ServiceAccountKubeconfig creates ServiceAccount name with exactly the given grants (Roles or
// ClusterRoles bound to it) and writes a kubeconfig with a token for it. Everything it creates
// carries the label lab.lanaccess.io/rbac=name for DeleteServiceAccount.
func (f Lab) ServiceAccountKubeconfig(ctx context.Context, name string, grants []Grant) (string, error) {
	c := f.Client
	lbl := map[string]string{"lab.lanaccess.io/rbac": name}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RBACNamespace}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("namespace %s: %w", RBACNamespace, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: RBACNamespace, Labels: lbl}}
	if _, err := c.CoreV1().ServiceAccounts(RBACNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("serviceaccount %s/%s: %w", RBACNamespace, name, err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: RBACNamespace}}
	for i, g := range grants {
		roleName := fmt.Sprintf("lab-rbac-%s-%d", name, i)
		meta := metav1.ObjectMeta{Name: roleName, Namespace: g.Namespace, Labels: lbl}
		if g.Namespace == "" {
			if _, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: g.Rules}, metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("clusterrole %s: %w", roleName, err)
			}
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName}}
			if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("clusterrolebinding %s: %w", roleName, err)
			}
			continue
		}
		if _, err := c.RbacV1().Roles(g.Namespace).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: g.Rules}, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("role %s/%s: %w", g.Namespace, roleName, err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName}}
		if _, err := c.RbacV1().RoleBindings(g.Namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("rolebinding %s/%s: %w", g.Namespace, roleName, err)
		}
	}
	exp := int64(24 * 3600)
	tok, err := c.CoreV1().ServiceAccounts(RBACNamespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", RBACNamespace, name, err)
	}
	ca, err := pki.Load(f.Layout.Path("pki"), pki.CA)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(f.Layout.Path("kubeconfigs"), 0o755); err != nil {
		return "", err
	}
	path := f.Layout.Path("kubeconfigs", "sa-"+name+".kubeconfig")
	return path, pki.WriteTokenKubeconfig(path, f.Layout.APIServerURL(), ca, tok.Status.Token)
}

// ManifestGrants turns the Roles and ClusterRoles of shipped RBAC manifests (pkg/manifests
// names) into grants: a lab ServiceAccount given them holds exactly what a cluster admin would
// grant the plugin.
func ManifestGrants(names ...string) ([]Grant, error) {
	var grants []Grant
	for _, name := range names {
		raw, err := manifests.Get(name)
		if err != nil {
			return nil, err
		}
		objs, err := fixture.Decode(name, raw)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			switch r := o.(type) {
			case *rbacv1.ClusterRole:
				grants = append(grants, Grant{Rules: r.Rules})
			case *rbacv1.Role:
				grants = append(grants, Grant{Namespace: r.Namespace, Rules: r.Rules})
			}
		}
	}
	if len(grants) == 0 {
		return nil, fmt.Errorf("%v: no Role or ClusterRole", names)
	}
	return grants, nil
}

// DeleteServiceAccount removes what ServiceAccountKubeconfig made for name.
func (f Lab) DeleteServiceAccount(ctx context.Context, name string) error {
	c := f.Client
	sel := metav1.ListOptions{LabelSelector: "lab.lanaccess.io/rbac=" + name}
	var errs []error
	if err := c.RbacV1().ClusterRoleBindings().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		errs = append(errs, err)
	}
	if err := c.RbacV1().ClusterRoles().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		errs = append(errs, err)
	}
	if rbs, err := c.RbacV1().RoleBindings("").List(ctx, sel); err == nil {
		for _, rb := range rbs.Items {
			errs = append(errs, ignoreNotFound(c.RbacV1().RoleBindings(rb.Namespace).Delete(ctx, rb.Name, metav1.DeleteOptions{})))
		}
	} else {
		errs = append(errs, err)
	}
	if roles, err := c.RbacV1().Roles("").List(ctx, sel); err == nil {
		for _, r := range roles.Items {
			errs = append(errs, ignoreNotFound(c.RbacV1().Roles(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})))
		}
	} else {
		errs = append(errs, err)
	}
	errs = append(errs, ignoreNotFound(c.CoreV1().ServiceAccounts(RBACNamespace).Delete(ctx, name, metav1.DeleteOptions{})))
	_ = os.Remove(f.Layout.Path("kubeconfigs", "sa-"+name+".kubeconfig"))
	return errors.Join(errs...)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
