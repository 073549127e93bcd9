"""The pieces every report is made of, shared by the audit's report (``core.audit.report``),
the attacks' report sections and the pages (no streamlit): HTML tables and figures
(``html``), the plotly figures both draw (``figures``) and the app's colours written into them
(``theme``)."""
