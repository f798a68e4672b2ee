from django.urls import path

from apps.analysis import apis, views
from apps.analysis.diagnosis import views as diagnosis
from apps.protocols.addressing import API_PREFIX, PAGE_PREFIX

app_name = "analysis"

_RUN = PAGE_PREFIX + "analysis/<int:number>/"
_DIAGNOSIS = PAGE_PREFIX + "diagnosis/"

urlpatterns = [
    path(PAGE_PREFIX + "analysis/", views.run_list, name="runs"),
    path(PAGE_PREFIX + "analysis/latest/", views.latest_report, name="latest"),
    path(_RUN, views.run_report, name="report"),
    path(f"{_RUN}status/", views.run_status, name="status"),
    path(f"{_RUN}result.json", views.result_download, name="result"),
    path(f"{_RUN}tidy.csv", views.tidy_download, name="tidy"),
    path(f"{_RUN}plots/<int:index>.svg", views.plot_svg, name="plot"),
    path(f"{_DIAGNOSIS}", diagnosis.diagnosis_page, name="diagnosis"),
    path(f"{_DIAGNOSIS}<int:number>/status/", diagnosis.diagnosis_status, name="diagnosis-status"),
    path(f"{_DIAGNOSIS}<int:number>/cancel/", diagnosis.diagnosis_cancel, name="diagnosis-cancel"),
    path(
        f"{_DIAGNOSIS}<int:number>/plots/<int:index>.svg",
        diagnosis.diagnosis_plot,
        name="diagnosis-plot",
    ),
]

_API = API_PREFIX + "analysis-runs"

api_urlpatterns = [
    path(_API, apis.AnalysisRunStartApi.as_view(), name="run-start"),
    path(f"{_API}/<int:number>", apis.AnalysisRunDetailApi.as_view(), name="run-detail"),
    path(f"{_API}/<int:number>/result", apis.AnalysisRunResultApi.as_view(), name="run-result"),
]
