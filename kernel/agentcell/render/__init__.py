"""How a turn is shown: one fold of the event stream, its static fallbacks, and the notebook's renderers.

The core is Jupyter-free: :mod:`.fold` (the turn as a reader sees it), :mod:`.statuses` (the status
vocabulary the widget's fold shares), :mod:`.markdown` and :mod:`.fallback_html` (a saved notebook's
fallbacks), :mod:`.renderer` (what a renderer is, the fallback bundle) and :mod:`.throttle`. Around it, the
renderers import IPython when they are built: :mod:`.markdown_renderer`, :mod:`.widget_renderer`, and
:mod:`.notebook_html` (a notebook as one HTML page, through nbconvert). The engine never imports this
package: it produces the stream, this folds it.
"""
