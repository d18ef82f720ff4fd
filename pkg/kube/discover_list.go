package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
)

// pageSize bounds each LIST response; maxPages bounds a server that keeps handing out
// continue tokens (500 x 200 = 100,000 objects of one kind).
const (
	pageSize = 500
	maxPages = 200
)

// listAll pages through one LIST with Limit/Continue.
func listAll[T any](ctx context.Context, base metav1.ListOptions, list func(context.Context, metav1.ListOptions) ([]T, string, error)) ([]T, error) {
	var out []T
	opts := base
	opts.Limit = pageSize
	for range maxPages {
		items, next, err := list(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		opts.Continue = next
	}
	return nil, fmt.Errorf("more than %d pages of %d objects: giving up", maxPages, pageSize)
}

// pagesOf adapts a typed client's List (which returns *XList) to listAll's page function; items
// picks the list's Items.
func pagesOf[L interface{ GetContinue() string }, T any](list func(context.Context, metav1.ListOptions) (L, error), items func(L) []T) func(context.Context, metav1.ListOptions) ([]T, string, error) {
	return func(ctx context.Context, o metav1.ListOptions) ([]T, string, error) {
		l, err := list(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return items(l), l.GetContinue(), nil
	}
}

// listServices keeps, page by page, only the Services keep accepts: memory then stays flat
// however many Services the cluster has.
func listServices(ctx context.Context, c client.Interface, ns string, keep func(*corev1.Service) bool) ([]corev1.Service, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]corev1.Service, string, error) {
		l, err := c.CoreV1().Services(ns).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		var kept []corev1.Service
		for i := range l.Items {
			if keep == nil || keep(&l.Items[i]) {
				kept = append(kept, l.Items[i])
			}
		}
		return kept, l.Continue, nil
	})
}

func listNodes(ctx context.Context, c client.Interface) ([]corev1.Node, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.CoreV1().Nodes().List, func(l *corev1.NodeList) []corev1.Node { return l.Items }))
}

func listNamespaces(ctx context.Context, c client.Interface) ([]corev1.Namespace, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.CoreV1().Namespaces().List, func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items }))
}

func listPods(ctx context.Context, c client.Interface, ns, selector string) ([]corev1.Pod, error) {
	return listAll(ctx, metav1.ListOptions{LabelSelector: selector}, pagesOf(c.CoreV1().Pods(ns).List, func(l *corev1.PodList) []corev1.Pod { return l.Items }))
}

func listConfigMaps(ctx context.Context, c client.Interface, ns, fieldSelector string) ([]corev1.ConfigMap, error) {
	return listAll(ctx, metav1.ListOptions{FieldSelector: fieldSelector}, pagesOf(c.CoreV1().ConfigMaps(ns).List, func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }))
}

// listConfigMapNamed lists the ConfigMap ns/name (none when it does not exist). The selector is
// built from its typed parts (a name read from the cluster cannot add a term), and only the
// ConfigMap of that name is kept: the API server returns no other, but a client that ignores
// field selectors (client-go's fake tracker) must not make another ConfigMap pass for it.
func listConfigMapNamed(ctx context.Context, c client.Interface, ns, name string) ([]corev1.ConfigMap, error) {
	got, err := listConfigMaps(ctx, c, ns, fields.OneTermEqualSelector("metadata.name", name).String())
	return slices.DeleteFunc(got, func(cm corev1.ConfigMap) bool { return cm.Name != name }), err
}

func listDeployments(ctx context.Context, c client.Interface, ns string) ([]appsv1.Deployment, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.AppsV1().Deployments(ns).List, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items }))
}

func listEndpointSlices(ctx context.Context, c client.Interface, ns, service string) ([]discoveryv1.EndpointSlice, error) {
	sel := discoveryv1.LabelServiceName + "=" + service
	return listAll(ctx, metav1.ListOptions{LabelSelector: sel}, pagesOf(c.DiscoveryV1().EndpointSlices(ns).List, func(l *discoveryv1.EndpointSliceList) []discoveryv1.EndpointSlice { return l.Items }))
}

func listPDBs(ctx context.Context, c client.Interface, ns string) ([]policyv1.PodDisruptionBudget, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.PolicyV1().PodDisruptionBudgets(ns).List, func(l *policyv1.PodDisruptionBudgetList) []policyv1.PodDisruptionBudget { return l.Items }))
}

func listIngresses(ctx context.Context, c client.Interface, ns string) ([]networkingv1.Ingress, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.NetworkingV1().Ingresses(ns).List, func(l *networkingv1.IngressList) []networkingv1.Ingress { return l.Items }))
}

func listIngressClasses(ctx context.Context, c client.Interface) ([]networkingv1.IngressClass, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.NetworkingV1().IngressClasses().List, func(l *networkingv1.IngressClassList) []networkingv1.IngressClass { return l.Items }))
}

func listWebhooks(ctx context.Context, c client.Interface) ([]admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.AdmissionregistrationV1().ValidatingWebhookConfigurations().List, func(l *admissionregistrationv1.ValidatingWebhookConfigurationList) []admissionregistrationv1.ValidatingWebhookConfiguration {
		return l.Items
	}))
}

func listAdmissionPolicies(ctx context.Context, c client.Interface) ([]admissionregistrationv1.ValidatingAdmissionPolicy, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.AdmissionregistrationV1().ValidatingAdmissionPolicies().List, func(l *admissionregistrationv1.ValidatingAdmissionPolicyList) []admissionregistrationv1.ValidatingAdmissionPolicy {
		return l.Items
	}))
}

func listAdmissionPolicyBindings(ctx context.Context, c client.Interface) ([]admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	return listAll(ctx, metav1.ListOptions{}, pagesOf(c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List, func(l *admissionregistrationv1.ValidatingAdmissionPolicyBindingList) []admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return l.Items
	}))
}

func listDynamic(ctx context.Context, d dynamic.Interface, r DynamicResource) ([]unstructured.Unstructured, error) {
	return listDynamicIn(ctx, d, r, "")
}

// listDynamicIn lists r in namespace ns ("" for all namespaces or a cluster-scoped r).
func listDynamicIn(ctx context.Context, d dynamic.Interface, r DynamicResource, ns string) ([]unstructured.Unstructured, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]unstructured.Unstructured, string, error) {
		var l *unstructured.UnstructuredList
		var err error
		if ns == "" {
			l, err = d.Resource(r.GVR).List(ctx, o)
		} else {
			l, err = d.Resource(r.GVR).Namespace(ns).List(ctx, o)
		}
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.GetContinue(), nil
	})
}

// IsNotInstalled reports whether err says the API server does not serve the resource at all
// (a CRD that is not installed, an API group of a newer Kubernetes): a normal absence.
func IsNotInstalled(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)
}

// isDead reports errors that end discovery whatever was being read: the context is over.
func isDead(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
