from django.urls import path

from portal.guides import views

page_urls = [
    path("guides/", views.guide_index, name="guides"),
    path("guides/<slug:slug>/", views.guide_detail, name="guide"),
]
