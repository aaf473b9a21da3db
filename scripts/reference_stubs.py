"""Empty stand-ins for the plotting and other imports of the reference
libraries that the reference scripts run (relplot_reference.py,
convention_reference.py): the code they call uses none of them."""
import sys
import types


class Stub(types.ModuleType):
    """A module whose every attribute is another Stub; called on a
    function (a decorator) it returns the function."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Stub(name)

    def __call__(self, *a, **k):
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]
        return lambda f: f


def install(names):
    """Puts a Stub in sys.modules for each name not imported yet."""
    for name in names:
        sys.modules.setdefault(name, Stub(name))
