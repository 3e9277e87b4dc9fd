"""The Kubernetes pod, from the downward API's variables; {} outside Kubernetes (neither
KUBERNETES_SERVICE_HOST nor /var/run/secrets/kubernetes.io)."""

import os

_VARIABLES = (
    ("K8S_NAMESPACE", "k8s.namespace.name"),
    ("K8S_POD_NAME", "k8s.pod.name"),
    ("K8S_POD_UID", "k8s.pod.uid"),
    ("K8S_NODE_NAME", "k8s.node.name"),
    ("K8S_CONTAINER_NAME", "k8s.container.name"),
    ("K8S_JOB_NAME", "k8s.job.name"),
    ("HOSTNAME", "k8s.pod.name"),  # the pod's name when K8S_POD_NAME is not set
)


def detect_kubernetes() -> dict:
    if not (os.environ.get("KUBERNETES_SERVICE_HOST")
            or os.path.exists("/var/run/secrets/kubernetes.io")):
        return {}
    attributes: dict = {}
    for variable, key in _VARIABLES:
        value = os.environ.get(variable)
        if value and key not in attributes:
            attributes[key] = value
    return attributes
