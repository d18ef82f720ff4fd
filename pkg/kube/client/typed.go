package client

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// typedClient is one resource's typed client: the requests of client-go's generic typed client
// (client-go v0.37.2, gentype/type.go, Client[T] with PrefersProtobuf), method for method, for
// the verbs the plugin uses. gentype itself is not used: its package also holds the fake clients
// (gentype/fake.go), which link client-go/testing and, through it, apimachinery's managed
// fields, structured-merge-diff and gnostic (15 packages and their package initialisers) into a
// binary that never runs a fake.
type typedClient[T object] struct {
	resource  string
	client    rest.Interface
	namespace string // "" for a cluster-scoped resource
	newObject func() T
}

// listClient is typedClient with List (gentype's ClientWithList[T, L]).
type listClient[T object, L runtime.Object] struct {
	*typedClient[T]
	newList func() L
}

func newTyped[T object](rc rest.Interface, resource, namespace string, empty func() T) *typedClient[T] {
	return &typedClient[T]{resource: resource, client: rc, namespace: namespace, newObject: empty}
}

// resource is a typed client of one resource with list, as client-go's generated code builds it
// (gentype.NewClientWithListAndApply, PrefersProtobuf), without the apply half: the plugin
// applies nothing, and apply would link the apply configurations.
func resource[T object, L runtime.Object](rc rest.Interface, name, namespace string, empty func() T, emptyList func() L) *listClient[T, L] {
	return &listClient[T, L]{typedClient: newTyped(rc, name, namespace, empty), newList: emptyList}
}

// Get is gentype's Client.Get.
func (c *typedClient[T]) Get(ctx context.Context, name string, options metav1.GetOptions) (T, error) {
	result := c.newObject()
	err := c.client.Get().
		UseProtobufAsDefaultIfPreferred(true).
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		Name(name).
		VersionedParams(&options, ParameterCodec()).
		Do(ctx).
		Into(result)
	return result, err
}

// List is gentype's alsoLister.List: the list's server-side timeout from opts.TimeoutSeconds.
func (l *listClient[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	list := l.newList()
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	err := l.client.Get().
		UseProtobufAsDefaultIfPreferred(true).
		NamespaceIfScoped(l.namespace, l.namespace != "").
		Resource(l.resource).
		VersionedParams(&opts, ParameterCodec()).
		Timeout(timeout).
		Do(ctx).
		Into(list)
	return list, err
}

// Create is gentype's Client.Create.
func (c *typedClient[T]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	result := c.newObject()
	err := c.client.Post().
		UseProtobufAsDefaultIfPreferred(true).
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		VersionedParams(&opts, ParameterCodec()).
		Body(obj).
		Do(ctx).
		Into(result)
	return result, err
}

// Update is gentype's Client.Update.
func (c *typedClient[T]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	result := c.newObject()
	err := c.client.Put().
		UseProtobufAsDefaultIfPreferred(true).
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		Name(obj.GetName()).
		VersionedParams(&opts, ParameterCodec()).
		Body(obj).
		Do(ctx).
		Into(result)
	return result, err
}

// Delete is gentype's Client.Delete.
func (c *typedClient[T]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return c.client.Delete().
		UseProtobufAsDefaultIfPreferred(true).
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		Name(name).
		Body(&opts).
		Do(ctx).
		Error()
}

// Patch is gentype's Client.Patch.
func (c *typedClient[T]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	result := c.newObject()
	err := c.client.Patch(pt).
		UseProtobufAsDefaultIfPreferred(true).
		NamespaceIfScoped(c.namespace, c.namespace != "").
		Resource(c.resource).
		Name(name).
		SubResource(subresources...).
		VersionedParams(&opts, ParameterCodec()).
		Body(data).
		Do(ctx).
		Into(result)
	return result, err
}
