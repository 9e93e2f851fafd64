"""The Pulumi program (`pulumi up` / `preview` / `destroy`): the pod spec in `superpod:pod`
becomes the layout's components and the generated files. Thin on purpose: everything lives
in topology.pulumi (see docs/pulumi.md)."""

import pulumi

from topology.pulumi.program import deploy
from topology.pulumi.settings import read_settings

deploy(read_settings(pulumi.Config("superpod"), pulumi.get_stack()))
