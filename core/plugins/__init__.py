"""Plugin loading and the built-in plugins (registered like third-party ones)."""
from .manager import PluginHost, get_plugin_host, reset_plugin_host

__all__ = ["PluginHost", "get_plugin_host", "reset_plugin_host"]
