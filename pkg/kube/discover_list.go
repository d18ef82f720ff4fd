package kube

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
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

// listTyped pages through a typed client's List: list is the client's method, items the list
// type's Items (every typed list carries its continue token in ListMeta).
func listTyped[L interface{ GetContinue() string }, T any](ctx context.Context, base metav1.ListOptions,
	list func(context.Context, metav1.ListOptions) (L, error), items func(L) []T,
) ([]T, error) {
	return listAll(ctx, base, func(ctx context.Context, o metav1.ListOptions) ([]T, string, error) {
		l, err := list(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return items(l), l.GetContinue(), nil
	})
}

// listServices keeps, page by page, only the Services keep accepts: memory then stays flat
// however many Services the cluster has.
func listServices(ctx context.Context, c kubernetes.Interface, ns string, keep func(*corev1.Service) bool) ([]corev1.Service, error) {
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

func listNodes(ctx context.Context, c kubernetes.Interface) ([]corev1.Node, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]corev1.Node, string, error) {
		l, err := c.CoreV1().Nodes().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listNamespaces(ctx context.Context, c kubernetes.Interface) ([]corev1.Namespace, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]corev1.Namespace, string, error) {
		l, err := c.CoreV1().Namespaces().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listPods(ctx context.Context, c kubernetes.Interface, ns, selector string) ([]corev1.Pod, error) {
	return listAll(ctx, metav1.ListOptions{LabelSelector: selector}, func(ctx context.Context, o metav1.ListOptions) ([]corev1.Pod, string, error) {
		l, err := c.CoreV1().Pods(ns).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listConfigMaps(ctx context.Context, c kubernetes.Interface, ns, fieldSelector string) ([]corev1.ConfigMap, error) {
	return listAll(ctx, metav1.ListOptions{FieldSelector: fieldSelector}, func(ctx context.Context, o metav1.ListOptions) ([]corev1.ConfigMap, string, error) {
		l, err := c.CoreV1().ConfigMaps(ns).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listDeployments(ctx context.Context, c kubernetes.Interface, ns string) ([]appsv1.Deployment, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]appsv1.Deployment, string, error) {
		l, err := c.AppsV1().Deployments(ns).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listEndpointSlices(ctx context.Context, c kubernetes.Interface, ns, service string) ([]discoveryv1.EndpointSlice, error) {
	sel := discoveryv1.LabelServiceName + "=" + service
	return listAll(ctx, metav1.ListOptions{LabelSelector: sel}, func(ctx context.Context, o metav1.ListOptions) ([]discoveryv1.EndpointSlice, string, error) {
		l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listPDBs(ctx context.Context, c kubernetes.Interface, ns string) ([]policyv1.PodDisruptionBudget, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]policyv1.PodDisruptionBudget, string, error) {
		l, err := c.PolicyV1().PodDisruptionBudgets(ns).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listIngresses(ctx context.Context, c kubernetes.Interface) ([]networkingv1.Ingress, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]networkingv1.Ingress, string, error) {
		l, err := c.NetworkingV1().Ingresses("").List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listIngressClasses(ctx context.Context, c kubernetes.Interface) ([]networkingv1.IngressClass, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]networkingv1.IngressClass, string, error) {
		l, err := c.NetworkingV1().IngressClasses().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listWebhooks(ctx context.Context, c kubernetes.Interface) ([]admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]admissionregistrationv1.ValidatingWebhookConfiguration, string, error) {
		l, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listAdmissionPolicies(ctx context.Context, c kubernetes.Interface) ([]admissionregistrationv1.ValidatingAdmissionPolicy, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]admissionregistrationv1.ValidatingAdmissionPolicy, string, error) {
		l, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listAdmissionPolicyBindings(ctx context.Context, c kubernetes.Interface) ([]admissionregistrationv1.ValidatingAdmissionPolicyBinding, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]admissionregistrationv1.ValidatingAdmissionPolicyBinding, string, error) {
		l, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	})
}

func listDynamic(ctx context.Context, d dynamic.Interface, r DynamicResource) ([]unstructured.Unstructured, error) {
	return listAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) ([]unstructured.Unstructured, string, error) {
		l, err := d.Resource(r.GVR).List(ctx, o)
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
